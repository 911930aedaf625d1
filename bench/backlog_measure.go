package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/sut"
)

// Latency is one measurement of the claim: its round trips from one or
// more connections for a bounded time.
type Latency struct {
	Connections int     `json:"connections"`
	Claims      int     `json:"claims"`       // claim transactions timed
	Empty       int     `json:"empty"`        // of which claimed nothing (all eligible rows locked)
	P50US       float64 `json:"p50_us"`       // median claim transaction
	P99US       float64 `json:"p99_us"`       // 99th percentile
	ClaimsPerS  float64 `json:"claims_per_s"` // claim transactions per second, all connections
}

// claimRolledBack runs the claim in a transaction that it rolls back: the
// claimed rows stay eligible, so the backlog keeps its mix however many
// claims are timed. The cost counted is BEGIN, the claim's statements and
// ROLLBACK, three round trips for a one-statement claim: exactly what the
// pgbench script runs (see pgbench.go). Each rolled-back update still
// leaves a dead row version, which the server prunes as it goes.
//
// It runs the statements itself rather than through sut's ClaimRows,
// which is the suite's: that one checks every row it reads (scanned into
// nullable values, a scan plan per query) and sends a section's earlier
// statements unprepared, which costs 50 to 200 µs a claim here, the price
// of the suite's checks and not of the protocol's SQL. This sends BEGIN,
// every statement and ROLLBACK prepared and counts the rows, as pgbench -M
// prepared does with the same script.
func claimRolledBack(ctx context.Context, conn *pgx.Conn, stmts *sut.Statements, worker string) (rows int, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := conn.Exec(ctx, "BEGIN", pgx.QueryExecModeCacheStatement); err != nil {
		return 0, err
	}
	rows, err = claimInTx(ctx, conn, stmts.Stmts[sut.Claim], worker)
	// ROLLBACK also ends a transaction that a failed statement aborted.
	if _, rerr := conn.Exec(ctx, "ROLLBACK", pgx.QueryExecModeCacheStatement); err == nil {
		err = rerr
	}
	return rows, err
}

func claimInTx(ctx context.Context, conn *pgx.Conn, st sut.Stmt, worker string) (rows int, err error) {
	for _, p := range st.Prelude {
		if _, err := conn.Exec(ctx, p.SQL, claimArgs(p, worker)...); err != nil {
			return 0, err
		}
	}
	res, err := conn.Query(ctx, st.SQL, claimArgs(st, worker)...)
	if err != nil {
		return 0, err
	}
	for res.Next() {
		rows++
	}
	return rows, res.Err()
}

// claimArgs are a claim statement's arguments (it takes only @worker),
// behind the mode that keeps even a statement without any prepared.
func claimArgs(st sut.Stmt, worker string) []any {
	args := []any{pgx.QueryExecModeCacheStatement}
	for range st.Params {
		args = append(args, worker)
	}
	return args
}

// measureClaims times rolled-back claims from conns connections for at
// least d and at least minClaims claims on the first connection.
func measureClaims(ctx context.Context, inst *sut.Instance, conns int, d time.Duration, minClaims int) (Latency, error) {
	r, err := timeClaims(ctx, inst, conns, d, minClaims)
	if err != nil {
		return Latency{}, err
	}
	return r.latency(conns)
}

// claimRun is what a run of timed claims saw.
type claimRun struct {
	samples []time.Duration
	empty   int
	wall    time.Duration
}

func (r *claimRun) add(o claimRun) {
	r.samples, r.empty, r.wall = append(r.samples, o.samples...), r.empty+o.empty, r.wall+o.wall
}

func (r claimRun) latency(conns int) (Latency, error) {
	l := Latency{Connections: conns, Claims: len(r.samples), Empty: r.empty,
		P50US: us(percentile(r.samples, 0.50)), P99US: us(percentile(r.samples, 0.99)),
		ClaimsPerS: math.Round(float64(len(r.samples))/r.wall.Seconds()*10) / 10}
	if l.Empty == l.Claims {
		return l, errNothingEligible
	}
	return l, nil
}

func timeClaims(ctx context.Context, inst *sut.Instance, conns int, d time.Duration, minClaims int) (claimRun, error) {
	var cs []*pgx.Conn
	defer func() {
		for _, c := range cs {
			closeConn(c)
		}
	}()
	for range conns {
		c, err := sut.Connect(ctx, inst.ConnString, inst.Statements.Schema)
		if err != nil {
			return claimRun{}, fmt.Errorf("connect: %w", err)
		}
		cs = append(cs, c)
		// One untimed claim: the statement prepared, the plan cached.
		if _, err := claimRolledBack(ctx, c, inst.Statements, "b1"); err != nil {
			return claimRun{}, fmt.Errorf("warm-up claim: %w", err)
		}
	}
	samples := make([][]time.Duration, conns)
	empty := make([]int, conns)
	errs := make([]error, conns)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			worker := fmt.Sprintf("b%d", i+1)
			for ctx.Err() == nil && (time.Since(start) < d || i == 0 && len(samples[0]) < minClaims) {
				t0 := time.Now()
				n, err := claimRolledBack(ctx, c, inst.Statements, worker)
				if err != nil {
					errs[i] = fmt.Errorf("claim as %s: %w", worker, err)
					cancel()
					return
				}
				samples[i] = append(samples[i], time.Since(t0))
				if n == 0 {
					empty[i]++
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return claimRun{}, err
	}
	return claimRun{samples: slices.Concat(samples...), empty: sumInts(empty), wall: wall}, nil
}

// errNothingEligible: every claim timed came back empty, so the figures are
// of a claim that finds nothing, not of one that takes a row.
var errNothingEligible = errors.New("every claim came back empty: the backlog has nothing eligible")

// percentile by the nearest rank; 0 for no samples.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func sumInts(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
