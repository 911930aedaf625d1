package worker

import (
	"context"
	"fmt"
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
