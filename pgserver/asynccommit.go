package pgserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// flushAndFreeze is AsyncCommit's MarkDurable. One commit under
// synchronous_commit=on writes (and flushes) the WAL up to its own commit
// record, so every commit before it; then the WAL writer is stopped, so
// that the commits from here to the next Crash stay in the WAL buffers and
// are lost with them, as when the crash comes before the WAL writer's next
// round. Without the stop, that round comes every wal_writer_delay (10 s at
// most) at a moment nobody chooses, and writes everything.
//
// The commit has to write WAL of its own: a transaction that only took an
// xid writes no WAL before its commit record and commits asynchronously
// even under synchronous_commit=on. A transactional logical message writes
// a WAL record (at any wal_level) and takes an xid, without a table.
func (d *deployment) flushAndFreeze(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, err := d.primary.control(ctx)
	if err != nil {
		return fmt.Errorf("mark durable: %w", err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("mark durable: %w", d.primary.controlFailed(err))
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit = on"); err != nil {
		return fmt.Errorf("mark durable: %w", d.primary.controlFailed(err))
	}
	if _, err := tx.Exec(ctx, "SELECT pg_logical_emit_message(true, 'outboxlab', 'durable')"); err != nil {
		return fmt.Errorf("mark durable: write a WAL record: %w", d.primary.controlFailed(err))
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("mark durable: commit: %w", d.primary.controlFailed(err))
	}
	if d.frozen != 0 {
		return nil // still stopped since the last MarkDurable
	}
	pid, err := awaitPID(ctx, conn, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'")
	if err != nil {
		return fmt.Errorf("mark durable: find the WAL writer: %w", err)
	}
	if err := stopWhileIdle(ctx, conn, pid); err != nil {
		return fmt.Errorf("mark durable: stop the WAL writer: %w", err)
	}
	d.frozen = pid
	return nil
}

// awaitPID runs query, which selects one process's pid, until it returns
// a row: after a crash, the server takes connections as soon as recovery
// ends and starts its WAL writer at the same moment, so the first read of
// pg_stat_activity may come before the WAL writer is in it (a crash under
// load found no row, and the check failed as the harness's). ctx bounds
// the wait.
func awaitPID(ctx context.Context, conn *pgx.Conn, query string) (int, error) {
	for {
		var pid int
		err := conn.QueryRow(ctx, query).Scan(&pid)
		if !errors.Is(err, pgx.ErrNoRows) {
			return pid, err
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("no such process yet: %w", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}
