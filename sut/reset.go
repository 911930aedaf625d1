package sut

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// resetPlan empties the schema's tables and rewinds its sequences in one
// round trip (DELETE plus setval, about 0.2 ms, where TRUNCATE costs about
// 1 ms), so a state machine can reset thousands of times per run.
type resetPlan struct {
	clear    string              // DELETE and setval statements
	clearing []string            // the same, a statement each (or the fallback alone)
	fallback string              // TRUNCATE ... RESTART IDENTITY CASCADE, for foreign keys
	enqueue  string              // the enqueue section's SQL, with @ parameters
	cache    map[string][]string // the enqueues of a list of events, by the list
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
	plan := resetPlan{clear: strings.Join(clear, ";\n"), clearing: clear, enqueue: enqueueSQL, cache: map[string][]string{}}
	if len(tables) > 0 {
		plan.fallback = "TRUNCATE " + strings.Join(tables, ", ") + " RESTART IDENTITY CASCADE"
	}
	return plan, nil
}

// Reset empties the protocol's tables, then enqueues the events, each in a
// transaction of its own, in one round trip (resetOnce).
func (inst *Instance) Reset(ctx context.Context, events []string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if inst.driver != nil {
		return inst.resetDriver(ctx, events)
	}
	key := fmt.Sprintf("%q", events) // unambiguous, unlike a join on ","
	enqueues, ok := inst.reset.cache[key]
	if !ok {
		for _, e := range events {
			enqueues = append(enqueues, withLiterals(inst.reset.enqueue, map[string]string{"event_id": e, "worker": "harness"}))
		}
		inst.reset.cache[key] = enqueues
	}
	run := func() error { return inst.resetOnce(ctx, enqueues) }
	err := run()
	if err != nil && (inst.Conn.IsClosed() || !IsServerError(err)) {
		// The checking connection is gone (a server restart, perhaps by
		// another harness on the same server). The reset is idempotent:
		// run it again over a fresh connection.
		if err = inst.EnsureConn(ctx); err == nil {
			err = run()
		}
	}
	if err != nil && inst.reset.fallback != "" && inst.reset.clear != inst.reset.fallback && IsServerError(err) {
		// A foreign key between the protocol's tables: slower, but correct.
		// Only once: any other error would come back from TRUNCATE too.
		inst.reset.clear, inst.reset.clearing = inst.reset.fallback, []string{inst.reset.fallback}
		return inst.Reset(ctx, events)
	}
	if err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	return nil
}

// resetOnce clears the tables in one transaction, then runs each event's
// enqueue in a transaction of its own, as producers enqueue, all in one
// round trip: a pipeline with a sync after the clearing and after each
// enqueue. A string of statements in one message would not do, even with
// BEGIN and COMMIT between them: every transaction a message starts takes
// that message's start as its now(), and a created_at DEFAULT now() would
// tie across events, which a claim ordered by creation time cannot order.
func (inst *Instance) resetOnce(ctx context.Context, enqueues []string) error {
	p := inst.Conn.PgConn().StartPipeline(ctx)
	for _, sql := range inst.reset.clearing {
		p.SendQueryParams(sql, nil, nil, nil, nil)
	}
	p.SendPipelineSync()
	for _, sql := range enqueues {
		p.SendQueryParams(sql, nil, nil, nil, nil)
		p.SendPipelineSync()
	}
	if err := p.Flush(); err != nil {
		return errors.Join(err, p.Close())
	}
	return p.Close()
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
