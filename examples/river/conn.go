package riverlab

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/outboxlab/outboxlab/driver"
	"github.com/riverqueue/river/riverdriver"
)

// executor is riverpgxv5's riverdriver.Executor on the worker's
// connection or transaction (Driver.UnwrapExecutor).
func (p *Protocol) executor(db driver.DB) (riverdriver.Executor, error) {
	tx, err := asTx(db)
	if err != nil {
		return nil, err
	}
	return p.client.Driver().UnwrapExecutor(tx), nil
}

// serverNow is the server's clock: River's services read Go's, and
// outboxlab's checks must read the server's.
func serverNow(ctx context.Context, db driver.DB) (time.Time, error) {
	var now time.Time
	err := db.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&now)
	return now, err
}

// asTx is the pgx.Tx River's driver takes: the suite's open transaction
// as it is, or the worker's connection, whose statements then run each in
// its own implicit transaction, as River's run on its pool.
func asTx(db driver.DB) (pgx.Tx, error) {
	switch d := db.(type) {
	case pgx.Tx:
		return d, nil
	case *pgx.Conn:
		return connTx{d}, nil
	}
	return nil, fmt.Errorf("riverlab: a Go driver gets a *pgx.Conn or a pgx.Tx, not a %T", db)
}

// connTx gives River's driver a *pgx.Conn as a pgx.Tx, for the statements
// River's queries run; it refuses to begin, commit or roll back: the
// suite owns the connection's transactions.
type connTx struct{ c *pgx.Conn }

var errOwnTx = errors.New("riverlab: River asked for a transaction of its own on the suite's connection")

func (t connTx) Begin(context.Context) (pgx.Tx, error) { return nil, errOwnTx }
func (t connTx) Commit(context.Context) error          { return errOwnTx }
func (t connTx) Rollback(context.Context) error        { return errOwnTx }
func (t connTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	return t.c.CopyFrom(ctx, table, cols, src)
}
func (t connTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.c.SendBatch(ctx, b)
}
func (t connTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }
func (t connTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.c.Prepare(ctx, name, sql)
}
func (t connTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.c.Exec(ctx, sql, args...)
}
func (t connTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.c.Query(ctx, sql, args...)
}
func (t connTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.c.QueryRow(ctx, sql, args...)
}
func (t connTx) Conn() *pgx.Conn { return t.c }
