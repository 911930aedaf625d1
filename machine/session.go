package machine

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/worker"
	"pgregory.net/rapid"
)

// Session leases (lease=session, model/session.go). No fixture expires such
// a lease: the machine ends the holder's session instead, with the step
// EndSession(w). The worker's process lives on and connects again, so it
// is a stale owner that will still send its outcomes, as a worker whose
// connection dropped in production does. A kill ends the session too, and
// so does a server restart.

// sessionLeases reports whether the protocol's leases are sessions.
func (r *run) sessionLeases() bool { return r.h.Inst.Proto.SessionLease }

// holdsSession reports whether w's session holds a live lease in some
// state the run may be in.
func (r *run) holdsSession(w string) bool {
	for _, s := range r.states {
		for _, row := range s.Rows {
			if row.Holder == w && row.Status == model.InProgress && row.LeaseLive {
				return true
			}
		}
	}
	return false
}

// endSessionAction ends the session of a running worker that holds a
// lease.
func (r *run) endSessionAction(t *rapid.T) {
	w := pick(t, "worker", r.workersWhere(func(w string) bool { return r.mayEndSession(w) == nil }))
	r.endSession(w)
}

// endSession runs EndSession(w) as a step.
func (r *run) endSession(w string) {
	r.exec(model.Op{Kind: model.EndSession, Worker: w}, func() model.Outcome {
		r.runEndSession(w)
		return model.Outcome{Kind: model.OK}
	})
	r.h.Coverage.add(CovEndSession)
}

// runEndSession closes w's connection and connects it again, and returns
// once the server has let go of what the old session held. Connected
// directly, that is when its backend is gone (a backend releases its
// advisory locks before it leaves pg_stat_activity). Through a pooler the
// worker's client goes, and PgBouncer resets the server connection it held
// in session mode (DISCARD ALL releases the locks); in transaction mode
// nothing releases them, which is the point of that topology: the harness
// goes on at once, and the state read judges. (It once waited the bounded
// time of the session mode's reset for them, two seconds a step that never
// ended early: most of the shrinking of a failure behind the transaction
// pooler.)
func (r *run) runEndSession(w string) {
	p := r.h.pool.Get(w)
	old := p.ServerBackend()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	released := r.h.pooledRelease(ctx, old)
	var err error
	r.h.timed(func() {
		if _, err = p.Do(worker.Request{Op: "reconnect"}); err != nil {
			return
		}
		if !old.Pooled {
			err = worker.AwaitBackendGone(ctx, r.h.Inst.Conn, old.PID)
			return
		}
		released()
	})
	r.h.pool.Used(w)
	if err != nil {
		r.t.Fatalf("harness: end %s's session: %v", w, err)
	}
}

// pooledRelease notes, before b's session is ended, the server connections
// PgBouncer has linked to it, and returns what waits until they hold no
// advisory lock: PgBouncer's reset of a session-mode connection comes a
// moment after its client has gone. Nothing to wait for unless the
// protocol's leases are sessions, b is pooled, and the pooler resets the
// connection at all (pgserver.Server.ReleasesClientSessions).
func (h *Harness) pooledRelease(ctx context.Context, b worker.Backend) (await func()) {
	if !h.Inst.Proto.SessionLease || !b.Pooled || !h.Srv.ReleasesClientSessions() {
		return func() {}
	}
	linked := h.linkedBackends(ctx, b)
	return func() { h.awaitAdvisoryLocksGone(ctx, linked) }
}

// linkedBackends are the server backends PgBouncer has linked to b's
// client now (named after it).
func (h *Harness) linkedBackends(ctx context.Context, b worker.Backend) []int32 {
	rows, err := h.Inst.Conn.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", b.App)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var pids []int32
	for rows.Next() {
		var pid int32
		if rows.Scan(&pid) == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// awaitAdvisoryLocksGone waits, up to sessionReleaseWait, until none of
// pids holds an advisory lock.
func (h *Harness) awaitAdvisoryLocksGone(ctx context.Context, pids []int32) {
	deadline := time.Now().Add(sessionReleaseWait)
	for len(pids) > 0 && time.Now().Before(deadline) {
		var held bool
		err := h.Inst.Conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = ANY($1))", pids).Scan(&held)
		if err != nil || !held {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// prepareSessions is Pool.Prepare under lease=session: a process whose
// session holds an advisory lock connects again, and the check starts once
// the server has let go of what the old sessions held. The last check's
// sessions may hold leases (locks) on rows of the ids the reset gives out
// again. A session that holds none is reset like any other protocol's:
// connecting again costs a new backend, and every replay of a shrink paid
// it for every process (65 of a replay's 95 ms, measured on
// session_lease_any_holder).
func (h *Harness) prepareSessions(names []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	holding := h.holdingAdvisoryLocks(ctx)
	var gone []uint32
	for _, name := range h.pool.Names() {
		if b := h.pool.Get(name).ServerBackend(); !b.Pooled && b.PID != 0 {
			if holding != nil && !holding[int32(b.PID)] {
				continue // its session holds nothing a check could find
			}
			gone = append(gone, b.PID)
		}
		h.pool.MarkStale(name)
	}
	// Through a pooler the sessions are the pooler's server connections,
	// which outlive their clients: the pooler closes them all.
	pooled, err := h.Srv.FreshServerSessions(ctx, h.Inst.Statements.Schema)
	if err != nil {
		return err
	}
	if h.Srv.Pooled() {
		h.pool.DiscardSpares() // their clients were closed with the rest
	}
	if err := h.pool.Prepare(names, func(name string) { h.kill(name) }); err != nil {
		return err
	}
	for _, pid := range append(gone, pooled...) {
		if err := worker.AwaitBackendGone(ctx, h.Inst.Conn, pid); err != nil {
			return err
		}
	}
	return nil
}

// holdingAdvisoryLocks is the set of backends that hold an advisory lock
// now; nil when the server does not say (then every session reconnects).
func (h *Harness) holdingAdvisoryLocks(ctx context.Context) map[int32]bool {
	rows, err := h.Inst.Conn.Query(ctx, "SELECT DISTINCT pid FROM pg_locks WHERE locktype = 'advisory' AND pid IS NOT NULL")
	if err != nil {
		return nil
	}
	defer rows.Close()
	holding := map[int32]bool{}
	for rows.Next() {
		var pid int32
		if rows.Scan(&pid) != nil {
			return nil
		}
		holding[pid] = true
	}
	if rows.Err() != nil {
		return nil
	}
	return holding
}

// sessionReleaseWait bounds the wait for a pooled session's locks to go.
const sessionReleaseWait = 2 * time.Second

// mayEndSession: ending a session needs lease=session and a running
// worker outside a transaction whose session holds a lease.
func (r *run) mayEndSession(w string) error {
	switch {
	case !r.sessionLeases():
		return fmt.Errorf("lease=session only")
	case r.busy(w):
		return fmt.Errorf("%s: %w", w, errBusy)
	case !r.running(w) || r.inTx(w):
		return fmt.Errorf("%s is not running outside a transaction", w)
	case !r.holdsSession(w):
		return fmt.Errorf("%s's session holds no lease", w)
	}
	return nil
}

func init() {
	registerStep(stepKind{
		may: func(r *run, op model.Op) error { return r.mayEndSession(op.Worker) },
		run: func(r *run, op model.Op) model.Outcome {
			r.endSession(op.Worker)
			return r.lastOut
		},
	}, model.EndSession)
}
