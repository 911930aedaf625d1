package machine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/worker"
)

// checkOneConnection holds a worker executable to one database connection:
// a second one (a pool, a connection of its own for a cancel or a lock)
// escapes the per-worker proxy and its faults, so a pass would mean
// nothing. Its backends are counted by its application_name, which is its
// own; a backend the worker has just closed may linger a moment, so only
// a count above one that lasts is its failure. Through a pooler the count
// says nothing (PgBouncer lends the name to the server connections it
// links), and the check is not made.
func (r *run) checkOneConnection(w string, p *worker.Process, op model.Op) {
	if r.h.Srv.Pooled() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	deadline := time.Now().Add(2 * time.Second)
	for {
		n, err := worker.Connections(ctx, r.h.Inst.Conn, p.AppName())
		if err != nil || n <= 1 {
			return // the checking connection's trouble is the next read's to report
		}
		if time.Now().After(deadline) {
			r.h.kill(w)
			r.dead[w] = true
			r.fail(connRule(op), fmt.Sprintf("%v: the worker has %d database connections named %q; the contract allows one (a second escapes the faults)%s",
				op, n, p.AppName(), stderrOf(p)))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func connRule(op model.Op) string {
	return strings.ToLower(string(op.Kind)) + ": the worker opened a second database connection"
}

// stderrOf is the end of a worker executable's stderr, for a failure's
// detail ("" for a Go worker, or one that wrote nothing).
func stderrOf(p *worker.Process) string {
	if p == nil || p.StderrTail() == "" {
		return ""
	}
	return "\n  its stderr ends:\n    " + strings.ReplaceAll(p.StderrTail(), "\n", "\n    ")
}
