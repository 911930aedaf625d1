package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/concurrent"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
)

// ConcurrentFigures are the concurrent mode's: its driver's throughput
// against the same statements from plain pgx connections, and the cost of
// the linearizability check.
type ConcurrentFigures struct {
	OpsPerS     float64 // operations per second of `check --concurrent`'s driver, unchecked
	RawOpsPerS  float64 // the same mix of statements from as many pgx connections
	LinearizeMS float64 // porcupine's time per 1000 recorded operations
}

// Concurrent measures inst (leased) with histories histories of each:
// the driver (worker processes over pipes, every operation recorded, the
// fixture actor) with checking off, the raw loop, then the driver with
// checking on, whose check time is divided by its operations (the drains'
// included). The two rates count the histories' concurrent parts only,
// resets and drains left out: the same statements, from as many actors.
// No faults (a restart would stall the figure), and no hold on open
// claim transactions: the figures are statements, not sleeps.
func Concurrent(srv *pgserver.Server, inst *sut.Instance, histories int) (ConcurrentFigures, error) {
	cfg := concurrent.Default()
	cfg.Faults, cfg.Hold, cfg.Histories, cfg.Duration, cfg.Seed = false, 0, histories, 10*time.Minute, 1
	var f ConcurrentFigures
	drive := func(check bool) (concurrent.Result, error) {
		c := cfg
		c.NoCheck = !check
		r, err := concurrent.NewRunner(srv, inst, c)
		if err != nil {
			return concurrent.Result{}, err
		}
		defer r.Close()
		res := r.Run()
		if res.Failure != nil {
			return res, fmt.Errorf("concurrent run of %s failed: %s: %s", inst.Proto.Name, res.Failure.Rule, res.Failure.Detail)
		}
		return res, nil
	}
	res, err := drive(false)
	if err != nil {
		return f, err
	}
	f.OpsPerS = round(float64(res.ConcurrentOps) / res.ConcurrentTime.Seconds())
	raw, err := rawMix(inst, cfg.Workers, cfg.Events, cfg.Ops, histories)
	if err != nil {
		return f, err
	}
	f.RawOpsPerS = round(raw)
	res, err = drive(true)
	if err != nil {
		return f, err
	}
	f.LinearizeMS = round(float64(res.CheckTime.Milliseconds()) / float64(res.Ops) * 1000)
	return f, nil
}

// rawMix runs the driver's mix of statements without the driver: per
// history, the table reset to events, then workers connections (one
// goroutine each) and a fixture connection spend ops operations, with the
// driver's draws (claims in autocommit and in a transaction committed at
// once, outcomes of a worker's own claims, expire, due, age and reads with
// the fixture actor's pauses). It returns operations per second of the
// concurrent parts, resets left out.
func rawMix(inst *sut.Instance, workers, events, ops, histories int) (float64, error) {
	ctx := context.Background()
	var conns []*pgx.Conn
	defer func() {
		for _, c := range conns {
			closeConn(c)
		}
	}()
	for range workers + 1 {
		c, err := sut.Connect(ctx, inst.ConnString, inst.Statements.Schema)
		if err != nil {
			return 0, err
		}
		conns = append(conns, c)
	}
	var names []string
	for i := range events {
		names = append(names, fmt.Sprintf("e%d", i+1))
	}
	total := 0
	var busy time.Duration
	for h := range histories {
		if err := inst.Reset(ctx, names); err != nil {
			return 0, err
		}
		rows, err := inst.Statements.ReadState(ctx, inst.Conn)
		if err != nil {
			return 0, err
		}
		var ids []string
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
		var left atomic.Int64
		left.Store(int64(ops))
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, workers+1)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- rawWorker(inst, conns[w], fmt.Sprintf("w%d", w+1), rand.New(rand.NewPCG(uint64(h), uint64(w))), &left)
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- rawFixtures(inst, conns[workers], ids, rand.New(rand.NewPCG(uint64(h), 99)), &left)
		}()
		wg.Wait()
		busy += time.Since(start)
		close(errs)
		for err := range errs {
			if err != nil {
				return 0, err
			}
		}
		total += ops
	}
	return float64(total) / busy.Seconds(), nil
}

type rawClaim struct {
	id  string
	gen int64
}

func rawWorker(inst *sut.Instance, conn *pgx.Conn, name string, rng *rand.Rand, left *atomic.Int64) error {
	st := inst.Statements
	var claims []rawClaim
	for left.Add(-1) >= 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		n := rng.IntN(100)
		var err error
		switch {
		case n < 30 || n >= 50 && len(claims) == 0:
			var rows []sut.ClaimResult
			rows, err = st.ClaimRows(ctx, conn, name)
			for _, r := range rows {
				claims = append(claims, rawClaim{r.ID, r.Gen})
			}
		case n < 50:
			var tx pgx.Tx
			if tx, err = conn.Begin(ctx); err == nil {
				var rows []sut.ClaimResult
				if rows, err = st.ClaimRows(ctx, tx, name); err == nil {
					left.Add(-1)
					err = tx.Commit(ctx)
					for _, r := range rows {
						claims = append(claims, rawClaim{r.ID, r.Gen})
					}
				}
			}
		default:
			c := claims[len(claims)-1]
			if rng.IntN(2) == 0 {
				c = claims[rng.IntN(len(claims))]
			}
			section := sut.Complete
			switch k := rng.IntN(20); {
			case k < 5:
				section = sut.Retry
			case k < 9 && inst.Proto.Has(sut.Renew):
				section = sut.Renew
			}
			_, err = st.Apply(ctx, conn, section, sut.Args{ID: c.id, Gen: c.gen, Worker: name})
		}
		cancel()
		if err != nil {
			return fmt.Errorf("raw %s: %w", name, err)
		}
		if len(claims) > 8 {
			claims = claims[len(claims)-8:]
		}
	}
	return nil
}

func rawFixtures(inst *sut.Instance, conn *pgx.Conn, ids []string, rng *rand.Rand, left *atomic.Int64) error {
	st := inst.Statements
	for left.Add(-1) >= 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		id := ids[rng.IntN(len(ids))]
		var err error
		switch n := rng.IntN(100); {
		case n < 22:
			_, err = st.ReadState(ctx, conn)
		case n < 52:
			err = st.Exec(ctx, conn, sut.Expire, sut.Args{ID: id, Worker: "harness"})
		case n < 67:
			err = st.Exec(ctx, conn, sut.Due, sut.Args{ID: id, Worker: "harness"})
		case n < 77 && inst.Proto.Has(sut.Age):
			err = st.Exec(ctx, conn, sut.Age, sut.Args{ID: id, Worker: "harness", Seconds: 18})
		default:
			_, err = st.ReadState(ctx, conn)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("raw fixtures: %w", err)
		}
		time.Sleep(time.Duration(200+rng.IntN(800)) * time.Microsecond)
	}
	return nil
}
