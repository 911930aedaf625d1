package sut

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// resetPlan empties the schema's tables and rewinds its sequences in one
// round trip (DELETE plus setval, about 0.2 ms, where TRUNCATE costs about
// 1 ms), so a state machine can reset thousands of times per run.
type resetPlan struct {
	clear    string // DELETE and setval statements
	fallback string // TRUNCATE ... RESTART IDENTITY CASCADE, for foreign keys
	enqueue  string // the enqueue section's SQL, with @ parameters
	cache    map[string]string
}

func planReset(ctx context.Context, conn *pgx.Conn, schema string, enqueueSQL string) (resetPlan, error) {
	var tables []string
	rows, _ := conn.Query(ctx, `SELECT quote_ident(schemaname) || '.' || quote_ident(tablename)
		FROM pg_tables WHERE schemaname = $1 ORDER BY tablename`, schema)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return resetPlan{}, err
	}
	rows, _ = conn.Query(ctx, `SELECT format('SELECT setval(%L, %s, false)',
			quote_ident(schemaname) || '.' || quote_ident(sequencename), start_value)
		FROM pg_sequences WHERE schemaname = $1 ORDER BY sequencename`, schema)
	setvals, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return resetPlan{}, err
	}
	var clear []string
	for _, t := range tables {
		clear = append(clear, "DELETE FROM "+t)
	}
	clear = append(clear, setvals...)
	plan := resetPlan{clear: strings.Join(clear, ";\n"), enqueue: enqueueSQL, cache: map[string]string{}}
	if len(tables) > 0 {
		plan.fallback = "TRUNCATE " + strings.Join(tables, ", ") + " RESTART IDENTITY CASCADE"
	}
	return plan, nil
}

// Reset empties the protocol's tables and enqueues the events, in one call.
func (inst *Instance) Reset(ctx context.Context, events []string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if inst.driver != nil {
		return inst.resetDriver(ctx, events)
	}
	key := fmt.Sprintf("%q", events) // unambiguous, unlike a join on ","
	sql, ok := inst.reset.cache[key]
	if !ok {
		parts := []string{inst.reset.clear}
		for _, e := range events {
			parts = append(parts, withLiterals(inst.reset.enqueue, map[string]string{"event_id": e, "worker": "harness"}))
		}
		// The separator goes on a line of its own: an enqueue section may
		// end in a comment (its trailing ";" is optional).
		sql = strings.Join(parts, "\n;\n")
		inst.reset.cache[key] = sql
	}
	err := inst.Conn.PgConn().Exec(ctx, sql).Close()
	if err != nil && (inst.Conn.IsClosed() || !IsServerError(err)) {
		// The checking connection is gone (a server restart, perhaps by
		// another harness on the same server). The reset is idempotent:
		// run it again over a fresh connection.
		if err = inst.EnsureConn(ctx); err == nil {
			err = inst.Conn.PgConn().Exec(ctx, sql).Close()
		}
	}
	if err != nil && inst.reset.fallback != "" && inst.reset.clear != inst.reset.fallback && IsServerError(err) {
		// A foreign key between the protocol's tables: slower, but correct.
		// Only once: any other error would come back from TRUNCATE too.
		inst.reset.clear = inst.reset.fallback
		inst.reset.cache = map[string]string{}
		return inst.Reset(ctx, events)
	}
	if err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	return nil
}

// withLiterals replaces @name parameters by quoted literals.
func withLiterals(sql string, values map[string]string) string {
	var b strings.Builder
	last := 0
	for _, t := range scanSQL(sql) {
		if t.kind != '@' {
			continue
		}
		b.WriteString(sql[last:t.offset])
		b.WriteString("'" + strings.ReplaceAll(values[t.name], "'", "''") + "'")
		last = t.offset + 1 + len(t.name)
	}
	b.WriteString(sql[last:])
	return strings.TrimRight(strings.TrimRight(b.String(), " \t\r\n"), ";")
}
