package worker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// AwaitBackendGone waits until the server has ended a backend (after its
// client was killed), so that the locks of its open transaction are
// released before the next step relies on it.
func AwaitBackendGone(ctx context.Context, conn *pgx.Conn, backend uint32) error {
	if backend == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		var alive bool
		err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)", int32(backend)).Scan(&alive)
		if err != nil {
			return fmt.Errorf("wait for backend to end: %w", err)
		}
		if !alive {
			return nil
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// TerminateBackend ends a backend from the server side (used when a fault
// left a connection that the server has not noticed is gone).
func TerminateBackend(ctx context.Context, conn *pgx.Conn, backend uint32) error {
	if backend == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := conn.Exec(ctx, "SELECT pg_terminate_backend($1)", int32(backend))
	return err
}

// Backend is how the harness finds the server backend that runs a
// worker's statements. Every worker process names its connection (App,
// the application_name, one per process: see appName). Connected
// directly, its backend is the connection's own (PID). Through a pooler
// (Pooled) it is not: PgBouncer answers the client with a process id of
// its own, and a transaction pooler runs each transaction on whichever
// server connection is free; but PgBouncer sets the client's
// application_name on every server connection it links to that client, so
// a backend not idle under that name runs the worker's statement or holds
// its transaction. An idle one may keep the name of its last client, and
// is nobody's.
//
// Connected directly, a worker executable's backends under App are all its
// own, idle ones too (direct). Once its process is dead (Exited), an idle
// one is not done with it: a statement the process sent just before it
// died may still sit unread in the backend's socket, and the backend runs
// it, and commits it, when it gets to it, perhaps after the harness has
// recorded the statement's outcome as unknown (a loaded machine showed it
// running tens of milliseconds later). So its end is the end of every
// backend under its name.
type Backend struct {
	PID    uint32
	App    string
	Pooled bool
	direct bool // connected without a pooler
	exited bool // the process is dead (Exited)
}

// Exited is b once its process has been killed: connected directly,
// every backend under its name is ended and waited for, idle or not.
func (b Backend) Exited() Backend {
	b.exited = true
	return b
}

// byName are the backends that run or hold the worker's work, found by its
// application_name: not idle, or any of them once a directly connected
// worker has exited.
func (b Backend) byName() string {
	if b.direct && b.exited {
		return "FROM pg_stat_activity WHERE application_name = $1"
	}
	return notIdle
}

// appSeq numbers the worker processes this process starts, so that no two
// connections of live workers share an application_name: not two
// incarnations of one worker name (a killed worker's backend may outlive
// its process by a few milliseconds, with its locks), nor two checks' w1
// on one shared server.
var appSeq atomic.Uint64

// appName is a new application_name for a process of worker name. The
// direct ones say so: a test that a pooler stands between the workers and
// the server looks for server connections PgBouncer named after a pooled
// client ("outboxlab w1 #7"), which a worker that went around the pooler
// must not look like.
func appName(name string, pooled bool) string {
	via := "direct "
	if pooled {
		via = ""
	}
	return fmt.Sprintf("outboxlab %s%s #%d", via, name, appSeq.Add(1))
}

// notIdle are the backends that run or hold a pooled worker's work now.
const notIdle = "FROM pg_stat_activity WHERE application_name = $1 AND state <> 'idle'"

// AwaitGone is AwaitBackendGone for b: through a pooler, until no backend
// runs or holds the worker's work.
func (b Backend) AwaitGone(ctx context.Context, conn *pgx.Conn) error {
	if !b.Pooled {
		return AwaitBackendGone(ctx, conn, b.PID)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		var alive bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 "+b.byName()+")", b.App).Scan(&alive); err != nil {
			return fmt.Errorf("wait for the backends of %s to end: %w", b.App, err)
		}
		if !alive {
			return nil
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// Terminate is TerminateBackend for b: through a pooler, every backend
// that runs or holds the worker's work (an idle one holds nothing of it,
// and may be about to run another client's).
func (b Backend) Terminate(ctx context.Context, conn *pgx.Conn) error {
	if !b.Pooled {
		return TerminateBackend(ctx, conn, b.PID)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) "+b.byName(), b.App)
	return err
}

// blockedBySQL names the session whose lock a worker's statement waits
// for, if it is one of holders (the application_names of the check's live
// worker processes). The waiter is the backend named App and, connected
// directly, with the pid the worker reported ($2; 0 through a pooler):
// after a reconnect the pid the harness knows may be another session's.
//
// Only a live session of the check counts, because only its locks are the
// protocol's doing. A statement also queues, for a few milliseconds, and
// longer on a loaded machine, behind sessions that are nobody's fault:
// autovacuum truncating a table (it takes an exclusive lock, and gives it
// up only once it sees a waiter, at its next check some 20 ms later; a
// protocol that makes a temporary table per claim keeps the catalogs'
// vacuum busy, and its claims met it), the backend of a worker killed a
// moment ago (ending it releases its locks), another test's session on a
// shared server. Such a wait is waited out, as any slow statement is.
//
// The lock that orders the commits of transactions that sent a NOTIFY (an
// object lock on pg_database) never counts: a protocol's commit with a
// NOTIFY in it may queue behind another's, which says nothing about its
// rows.
const blockedBySQL = `SELECT h.application_name
FROM pg_stat_activity AS w
CROSS JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS b(pid)
JOIN pg_stat_activity AS h ON h.pid = b.pid
WHERE w.application_name = $1 AND ($2 = 0 OR w.pid = $2) AND w.state <> 'idle'
  AND h.application_name = ANY($3)
  AND EXISTS (SELECT 1 FROM pg_locks AS l
      WHERE l.pid = w.pid AND NOT l.granted
        AND NOT (l.locktype = 'object' AND l.classid = 'pg_database'::regclass))
ORDER BY h.application_name
LIMIT 1`

// BlockedBy reports which of holders (application_names of live worker
// processes, Process.AppName) holds a lock b's statement waits for: "" when
// it waits on none of theirs. That is the evidence that a statement is
// blocked, rather than slow on a loaded machine.
func (b Backend) BlockedBy(ctx context.Context, conn *pgx.Conn, holders []string) (string, error) {
	if b.App == "" || !b.Pooled && b.PID == 0 {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	pid := int32(b.PID)
	if b.Pooled {
		pid = 0 // PgBouncer's, not a backend's
	}
	var holder string
	err := conn.QueryRow(ctx, blockedBySQL, b.App, pid, holders).Scan(&holder)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return holder, err
}

// errNoCancel is what a pooled connection's cancel request dial returns.
var errNoCancel = errors.New("no cancel requests through a pooler (PgBouncer 1.18 may crash on one)")

// noCancelRequests lets cfg's connection dial once, for itself: each later
// dial would be a cancel request, which pgx sends when it closes a
// connection whose statement a deadline interrupted. PgBouncer 1.18 dies on
// a cancel request whose client goes away before the server has handled
// it ("FATAL ... disconnect_client(): bad client state: 0",
// pgbouncer/pgbouncer#801, fixed in 1.19), and a worker killed right after
// such a close did exactly that: every worker's connection was then reset.
// Without the cancel the statement still ends: the closed client makes
// PgBouncer close the server connection it held, and the server rolls back.
func noCancelRequests(cfg *pgx.ConnConfig) {
	dial, dialed := cfg.DialFunc, false
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dialed {
			return nil, errNoCancel
		}
		dialed = true
		return dial(ctx, network, addr)
	}
}

// Connections is how many server backends carry the application_name app.
func Connections(ctx context.Context, conn *pgx.Conn, app string) (int, error) {
	var n int
	err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n)
	return n, err
}
