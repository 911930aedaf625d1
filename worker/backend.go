package worker

import (
	"context"
	"errors"
	"fmt"
	"net"
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

// waitsOnLockSQL asks whether a backend waits for a lock another session
// holds, leaving out the lock that orders the commits of transactions that
// sent a NOTIFY (an object lock on pg_database): every run on a shared
// server takes it, so a protocol's commit with a NOTIFY in it may queue
// behind another test's, which says nothing about the protocol's rows (the
// fixed procrastinate once failed "commit blocked" at its first commit,
// with other protocols running beside it on a loaded machine).
const waitsOnLockSQL = `SELECT cardinality(pg_blocking_pids($1)) > 0 AND EXISTS (
    SELECT 1 FROM pg_locks
    WHERE pid = $1 AND NOT granted
      AND NOT (locktype = 'object' AND classid = 'pg_database'::regclass))`

// WaitsOnLock reports whether the server has a backend waiting for a lock
// another session holds: the evidence that a statement is blocked, rather
// than slow on a loaded machine.
func WaitsOnLock(ctx context.Context, conn *pgx.Conn, backend uint32) (bool, error) {
	if backend == 0 {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var blocked bool
	err := conn.QueryRow(ctx, waitsOnLockSQL, int32(backend)).Scan(&blocked)
	return blocked, err
}

// Backend is how the harness finds the server backend that runs a
// worker's statements. Connected directly, it is the connection's own
// (PID). Through a pooler it is not: PgBouncer answers the client with a
// process id of its own, and a transaction pooler runs each transaction on
// whichever server connection is free. There the worker's client carries
// an application_name of its own (App, AppName), which PgBouncer sets on
// every server connection it links to that client; a backend not idle
// under that name runs the worker's statement or holds its transaction.
// An idle one may keep the name of its last client, and is nobody's.
type Backend struct {
	PID uint32
	App string
}

// AppName is the application_name of worker name's pooled connection.
func AppName(name string) string { return "outboxlab " + name }

// notIdle are the backends that run or hold a pooled worker's work now.
const notIdle = "FROM pg_stat_activity WHERE application_name = $1 AND state <> 'idle'"

// AwaitGone is AwaitBackendGone for b: through a pooler, until no backend
// runs or holds the worker's work.
func (b Backend) AwaitGone(ctx context.Context, conn *pgx.Conn) error {
	if b.App == "" {
		return AwaitBackendGone(ctx, conn, b.PID)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		var alive bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 "+notIdle+")", b.App).Scan(&alive); err != nil {
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
	if b.App == "" {
		return TerminateBackend(ctx, conn, b.PID)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) "+notIdle, b.App)
	return err
}

// WaitsOnLock is WaitsOnLock for b. Through a pooler, a statement that
// waits for a free server connection has no backend yet: it waits on no
// lock (the contract's rule), and this says no.
func (b Backend) WaitsOnLock(ctx context.Context, conn *pgx.Conn) (bool, error) {
	if b.App == "" {
		return WaitsOnLock(ctx, conn, b.PID)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var blocked bool
	err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 "+notIdle+" AND cardinality(pg_blocking_pids(pid)) > 0)", b.App).Scan(&blocked)
	return blocked, err
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
