package sut

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// query runs a section's statement and hands its rows to read, which reads
// them to the end (or stops with an error) and reports rows.Err. A section
// of one statement is one round trip, as it always was; one with a Prelude
// runs all its statements in one transaction (see runSteps).
func query(ctx context.Context, q Querier, st Stmt, a Args, read func(pgx.Rows) error) error {
	if len(st.Prelude) > 0 {
		return runSteps(ctx, q, st, a, read)
	}
	rows, err := q.Query(ctx, st.SQL, a.list(st.Params)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return read(rows)
}

// beginner is a connection that can open a transaction: *pgx.Conn.
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// runSteps runs a section of several statements in order in one
// transaction, so that a crash between them leaves nothing half done, as in
// the library the protocol stands for. Inside an open transaction (a Begin
// claim) they run in it, which stays open: its Commit or Rollback decides
// for all of them. On a bare connection the transaction is this call's own:
// committed after the last statement's rows were read, rolled back on any
// error, the result's included, so a claim the suite refuses takes nothing.
func runSteps(ctx context.Context, q Querier, st Stmt, a Args, read func(pgx.Rows) error) error {
	if tx, ok := q.(pgx.Tx); ok {
		return steps(ctx, tx, st, a, read)
	}
	b, ok := q.(beginner)
	if !ok {
		return fmt.Errorf("a section of %d statements needs a connection that can begin a transaction, not a %T", len(st.Prelude)+1, q)
	}
	tx, err := b.Begin(ctx)
	if err != nil {
		return err
	}
	if err := steps(ctx, tx, st, a, read); err != nil {
		// A failed rollback closes the connection (pgx does): the
		// caller sees the first error, and the next call reconnects.
		tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

func steps(ctx context.Context, tx pgx.Tx, st Stmt, a Args, read func(pgx.Rows) error) error {
	for _, p := range st.Prelude {
		if _, err := tx.Exec(ctx, p.SQL, a.list(p.Params)...); err != nil {
			return err
		}
	}
	rows, err := tx.Query(ctx, st.SQL, a.list(st.Params)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return read(rows)
}
