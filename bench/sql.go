package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/sut"
)

// Events is what every reset probe enqueues: the state machine's largest
// starting table (machine.Default().MaxEvents).
var Events = []string{"e1", "e2", "e3", "e4"}

// SelectOne is the floor: one SELECT 1 round trip on a connection in
// pgx's default mode, where the statement is prepared once and cached.
func SelectOne(ctx context.Context, connString string) (*Probe, error) {
	conn, err := connect(ctx, connString)
	if err != nil {
		return nil, err
	}
	return &Probe{
		Run: func(ctx context.Context) error {
			var n int
			return conn.QueryRow(ctx, "SELECT 1").Scan(&n)
		},
		Close: func() { closeConn(conn) },
	}, nil
}

// Reset is the suite's isolation between checks: the installed
// protocol's tables emptied and refilled with Events in one round trip.
func Reset(inst *sut.Instance) *Probe {
	return &Probe{
		Run:   func(ctx context.Context) error { return inst.Reset(ctx, Events) },
		Close: func() {},
	}
}

// SchemaReset is the article's isolation: a schema of its own, the
// protocol's table created in it, the schema dropped. It is given every
// advantage: one round trip for all three, and no events enqueued, where
// Reset enqueues four. The ratio of the two is a lower bound.
func SchemaReset(ctx context.Context, connString string, p *sut.Protocol) (*Probe, error) {
	schema := sut.NewSchemaName()
	// search_path names the schema before it exists: the DDL's unqualified
	// table lands in it once it is created.
	conn, err := sut.Connect(ctx, connString, schema)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	ddl := strings.TrimSpace(p.Sections[sut.Schema].SQL)
	// Separators on lines of their own: the DDL may end in a comment.
	sql := "CREATE SCHEMA " + schema + "\n;\n" + ddl + "\n;\nDROP SCHEMA " + schema + " CASCADE"
	return &Probe{
		Run: func(ctx context.Context) error {
			if err := conn.PgConn().Exec(ctx, sql).Close(); err != nil {
				return fmt.Errorf("create and drop schema: %w", err)
			}
			return nil
		},
		Close: func() { closeConn(conn) },
	}, nil
}

func connect(ctx context.Context, connString string) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return conn, nil
}

func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn.Close(ctx)
}
