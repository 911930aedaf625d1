package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
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

// claimTx is the transaction every claim timed runs, by the bench and by
// pgbench alike: BEGIN, the claim's statements, ROLLBACK, each its own
// round trip, three for a one-statement claim. Rolling back keeps the
// claimed rows eligible, so the backlog keeps its mix however many claims
// are timed; each rolled-back update still leaves a dead row version,
// which the server prunes as it goes. Counted is the statement whose rows
// are the claim's.
//
// The bench does not claim through sut's ClaimRows, which is the suite's:
// that one checks every row it reads (scanned into nullable values, a
// scan plan per query) and sends a section's earlier statements
// unprepared, which costs 50 to 200 µs a claim here, the price of the
// suite's checks and not of the protocol's SQL.
func claimTx(st sut.Stmt) (stmts []sut.Stmt, counted int) {
	stmts = append([]sut.Stmt{{SQL: "BEGIN"}}, st.Prelude...)
	stmts = append(stmts, sut.Stmt{SQL: st.SQL, Params: st.Params})
	return append(stmts, sut.Stmt{SQL: "ROLLBACK"}), len(stmts) - 1
}

// openClaimTx connects over a rawConn and prepares claimTx with every
// parameter bound to worker (a claim takes only @worker), as pgbench -D
// worker=... does.
func openClaimTx(ctx context.Context, inst *sut.Instance, worker string) (*wireTx, error) {
	return openClaimTxDialing(ctx, inst, worker, dialRaw)
}

// openClaimTxDialing is openClaimTx over the connection dial makes (nil:
// pgx's own, a plain net.Conn).
func openClaimTxDialing(ctx context.Context, inst *sut.Instance, worker string, dial pgconn.DialFunc) (*wireTx, error) {
	stmts, counted := claimTx(inst.Statements.Stmts[sut.Claim])
	cfg, err := sut.ConnConfig(inst.ConnString, inst.Statements.Schema)
	if err != nil {
		return nil, err
	}
	if dial != nil {
		cfg.DialFunc = dial
	}
	c, err := sut.ConnectWith(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	var sqls []string
	var nparams []int
	for _, s := range stmts {
		sqls, nparams = append(sqls, s.SQL), append(nparams, len(s.Params))
	}
	return openWireTx(ctx, c, sqls, nparams, worker, counted)
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
	var cs []*wireTx
	defer func() {
		for _, c := range cs {
			c.close()
		}
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i := range conns {
		c, err := openClaimTx(ctx, inst, fmt.Sprintf("b%d", i+1))
		if err != nil {
			return claimRun{}, err
		}
		cs = append(cs, c)
		// One untimed claim: the first execution plans it.
		if _, err := c.run(); err != nil {
			return claimRun{}, fmt.Errorf("warm-up claim: %w", err)
		}
	}
	samples := make([][]time.Duration, conns)
	empty := make([]int, conns)
	errs := make([]error, conns)
	start := time.Now()
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			worker := fmt.Sprintf("b%d", i+1)
			for ctx.Err() == nil && (time.Since(start) < d || i == 0 && len(samples[0]) < minClaims) {
				t0 := time.Now()
				n, err := c.run()
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
