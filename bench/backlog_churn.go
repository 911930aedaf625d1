package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/sut"
)

// Churn is a bounded run of enqueue-claim-complete cycles at full speed
// from several connections, with autovacuum on, on the largest backlog:
// what a queue's constant updates do to its table and its claim.
type Churn struct {
	Events      int     `json:"events"` // the backlog it started from
	Seconds     float64 `json:"seconds"`
	Connections int     `json:"connections"`
	Cycles      int     `json:"cycles"` // each: enqueue one event, claim, complete what it claimed
	CyclesPerS  float64 `json:"cycles_per_s"`
	Autovacuum  string  `json:"autovacuum"`         // the server's setting
	Naptime     string  `json:"autovacuum_naptime"` // how often autovacuum looks at a database
	Before      Tables  `json:"before"`
	After       Tables  `json:"after"`
	AfterVacuum Tables  `json:"after_vacuum"` // and then a manual VACUUM (ANALYZE)
	// The mix and the claim's plan at the end, after the VACUUM.
	AfterMix         Mix    `json:"after_mix"`
	AfterPlanRemoved int    `json:"after_rows_removed"`
	AfterKeyLine     string `json:"after_key_line"`
}

// Tables are the protocol's tables as the statistics collector and the
// claim see them, summed over the schema's tables.
type Tables struct {
	LiveTuples     int64   `json:"n_live_tup"`
	DeadTuples     int64   `json:"n_dead_tup"`
	Bytes          int64   `json:"total_bytes"` // pg_total_relation_size: heap, indexes, TOAST
	AutovacuumRuns int64   `json:"autovacuum_count"`
	ClaimP50US     float64 `json:"claim_p50_us"` // rolled-back claims from one connection
	ClaimP99US     float64 `json:"claim_p99_us"`
	// ClaimEmpty: every claim timed found nothing eligible (the churn
	// took it all): the figures are of a claim that comes back empty.
	ClaimEmpty bool `json:"claim_empty,omitempty"`
}

// churn runs the cycles for d from conns connections and reads the tables
// and the claim before and after.
func churn(ctx context.Context, inst *sut.Instance, events, conns int, d, sample time.Duration) (Churn, error) {
	c := Churn{Events: events, Connections: conns}
	err := inst.Conn.QueryRow(ctx, "SELECT current_setting('autovacuum'), current_setting('autovacuum_naptime')").Scan(&c.Autovacuum, &c.Naptime)
	if err != nil {
		return c, err
	}
	// The measurements before left dead versions of the rows they claimed
	// and rolled back: clean them up, so that what follows is the churn's.
	tables, err := schemaTables(ctx, inst)
	if err == nil {
		err = vacuumAnalyze(ctx, inst, tables)
	}
	if err != nil {
		return c, err
	}
	if c.Before, err = readTables(ctx, inst, sample); err != nil {
		return c, fmt.Errorf("before: %w", err)
	}
	var cs []*pgx.Conn
	defer func() {
		for _, cn := range cs {
			closeConn(cn)
		}
	}()
	for range conns {
		cn, err := sut.Connect(ctx, inst.ConnString, inst.Statements.Schema)
		if err != nil {
			return c, fmt.Errorf("connect: %w", err)
		}
		cs = append(cs, cn)
	}
	cycles := make([]int, conns)
	errs := make([]error, conns)
	start := time.Now()
	var wg sync.WaitGroup
	for i, cn := range cs {
		wg.Go(func() {
			worker := fmt.Sprintf("c%d", i+1)
			for n := 0; time.Since(start) < d && ctx.Err() == nil; n++ {
				if err := cycle(ctx, inst.Statements, cn, worker, fmt.Sprintf("churn-%s-%d", worker, n)); err != nil {
					errs[i] = fmt.Errorf("cycle as %s: %w", worker, err)
					return
				}
				cycles[i]++
			}
			// Statistics reach other sessions when a backend flushes them:
			// ask for it now rather than wait for the next interval.
			fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			cn.Exec(fctx, "SELECT pg_stat_force_next_flush()")
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	c.Seconds = math.Round(elapsed.Seconds()*10) / 10
	c.Cycles = sumInts(cycles)
	c.CyclesPerS = math.Round(float64(c.Cycles)/elapsed.Seconds()*10) / 10
	if c.After, err = readTables(ctx, inst, sample); err != nil {
		return c, fmt.Errorf("after: %w", err)
	}
	// A manual VACUUM then tells the dead versions' share of the slowdown
	// from the table's growth.
	if err := vacuumAnalyze(ctx, inst, tables); err != nil {
		return c, err
	}
	if c.AfterVacuum, err = readTables(ctx, inst, sample); err != nil {
		return c, fmt.Errorf("after vacuum: %w", err)
	}
	// The plan says what the claim now walks past (the timings alone
	// cannot tell the table's change from the machine's noise).
	mix, err := readMix(ctx, inst)
	if err != nil {
		return c, err
	}
	plan, err := explainClaim(ctx, inst, tables, mix.NotSent())
	if err != nil {
		return c, err
	}
	c.AfterMix, c.AfterPlanRemoved, c.AfterKeyLine = mix, plan.Removed, plan.KeyLine
	return c, nil
}

// cycle is a relay's work on one event: it arrives, is claimed (this one
// or an earlier one: the claim takes whatever is first), and is sent.
func cycle(ctx context.Context, st *sut.Statements, conn *pgx.Conn, worker, event string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := st.Exec(ctx, conn, sut.Enqueue, sut.Args{EventID: event, Worker: worker}); err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	claimed, err := st.ClaimRows(ctx, conn, worker)
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	for _, r := range claimed {
		if _, err := st.Apply(ctx, conn, sut.Complete, sut.Args{ID: r.ID, Gen: r.Gen, Worker: worker}); err != nil {
			return fmt.Errorf("complete: %w", err)
		}
	}
	return nil
}

// readTables reads the statistics of the schema's tables and times the
// claim for sample.
func readTables(ctx context.Context, inst *sut.Instance, sample time.Duration) (Tables, error) {
	var t Tables
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	inst.Conn.Exec(qctx, "SELECT pg_stat_clear_snapshot()")
	err := inst.Conn.QueryRow(qctx, `SELECT coalesce(sum(n_live_tup), 0)::bigint, coalesce(sum(n_dead_tup), 0)::bigint,
			coalesce(sum(pg_total_relation_size(relid)), 0)::bigint, coalesce(sum(autovacuum_count), 0)::bigint
		FROM pg_stat_user_tables WHERE schemaname = $1`, inst.Statements.Schema).
		Scan(&t.LiveTuples, &t.DeadTuples, &t.Bytes, &t.AutovacuumRuns)
	if err != nil {
		return t, fmt.Errorf("table statistics: %w", err)
	}
	l, err := measureClaims(ctx, inst, 1, sample, 5)
	t.ClaimP50US, t.ClaimP99US = l.P50US, l.P99US
	if errors.Is(err, errNothingEligible) {
		t.ClaimEmpty, err = true, nil
	}
	return t, err
}
