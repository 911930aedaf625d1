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
	err := conn.QueryRow(ctx, "SELECT cardinality(pg_blocking_pids($1)) > 0", int32(backend)).Scan(&blocked)
	return blocked, err
}
