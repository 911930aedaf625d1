package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/concurrent"
	"github.com/outboxlab/outboxlab/model"
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
	// Mix and RawMix are the two rates' statements by kind and outcome:
	// what shows that they ran the same statements.
	Mix, RawMix concurrent.Mix
	// CPUPerOpUS and RawCPUPerOpUS are the CPU time this process and its
	// worker processes spent per operation (PostgreSQL's left out): less
	// noisy than the rates on a shared machine.
	// WorkerCPUPerOpUS is the worker processes' part of CPUPerOpUS.
	CPUPerOpUS, RawCPUPerOpUS, WorkerCPUPerOpUS float64
	// ServerCPUPerOpUS and RawServerCPUPerOpUS are PostgreSQL's, when the
	// server runs on this machine (0 otherwise).
	ServerCPUPerOpUS, RawServerCPUPerOpUS float64
}

func mixTotal(m concurrent.Mix) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
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
	pg, hasPG := newServerCPU(inst)
	self0, children0 := cpuTime()
	pg0 := pg.now()
	res, err := drive(false)
	if err != nil {
		return f, err
	}
	self1, children1 := cpuTime()
	if hasPG {
		f.ServerCPUPerOpUS = perOpUS(pg.now()-pg0, res.Ops)
	}
	f.CPUPerOpUS = perOpUS(self1-self0+children1-children0, res.Ops)
	f.WorkerCPUPerOpUS = perOpUS(children1-children0, res.Ops)
	f.OpsPerS = round(float64(res.ConcurrentOps) / res.ConcurrentTime.Seconds())
	f.Mix = res.ConcurrentMix
	self0, _ = cpuTime()
	pg0 = pg.now()
	raw, mix, err := rawMix(inst, cfg.Workers, cfg.Events, cfg.Ops, histories)
	f.RawMix = mix
	self1, _ = cpuTime()
	f.RawCPUPerOpUS = perOpUS(self1-self0, mixTotal(mix))
	if hasPG {
		f.RawServerCPUPerOpUS = perOpUS(pg.now()-pg0, mixTotal(mix))
	}
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
func rawMix(inst *sut.Instance, workers, events, ops, histories int) (float64, concurrent.Mix, error) {
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
			return 0, nil, err
		}
		conns = append(conns, c)
	}
	var names []string
	for i := range events {
		names = append(names, fmt.Sprintf("e%d", i+1))
	}
	mix := concurrent.Mix{}
	var busy time.Duration
	for h := range histories {
		if err := inst.Reset(ctx, names); err != nil {
			return 0, nil, err
		}
		rows, err := inst.Statements.ReadState(ctx, inst.Conn)
		if err != nil {
			return 0, nil, err
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
		mixes := make([]concurrent.Mix, workers+1)
		for w := range workers {
			wg.Add(1)
			mixes[w] = concurrent.Mix{}
			go func() {
				defer wg.Done()
				errs <- rawWorker(inst, conns[w], fmt.Sprintf("w%d", w+1), rand.New(rand.NewPCG(uint64(h), uint64(w))), &left, mixes[w])
			}()
		}
		wg.Add(1)
		mixes[workers] = concurrent.Mix{}
		go func() {
			defer wg.Done()
			errs <- rawFixtures(inst, conns[workers], ids, rand.New(rand.NewPCG(uint64(h), 99)), &left, mixes[workers])
		}()
		wg.Wait()
		busy += time.Since(start)
		close(errs)
		for err := range errs {
			if err != nil {
				return 0, nil, err
			}
		}
		for _, m := range mixes {
			mix.Merge(m)
		}
	}
	return float64(mixTotal(mix)) / busy.Seconds(), mix, nil
}

type rawClaim struct {
	id  string
	gen int64
}

func claimKey(kind model.Kind, rows []sut.ClaimResult) string {
	if len(rows) == 0 {
		return concurrent.MixKey(kind, model.Empty)
	}
	return concurrent.MixKey(kind, model.Claimed)
}

func rawWorker(inst *sut.Instance, conn *pgx.Conn, name string, rng *rand.Rand, left *atomic.Int64, mix concurrent.Mix) error {
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
			mix[claimKey(model.ClaimOp, rows)]++
		case n < 50:
			var tx pgx.Tx
			if tx, err = conn.Begin(ctx); err == nil {
				var rows []sut.ClaimResult
				if rows, err = st.ClaimRows(ctx, tx, name); err == nil {
					mix[claimKey(model.Begin, rows)]++
					left.Add(-1)
					err = tx.Commit(ctx)
					mix[concurrent.MixKey(model.Commit, model.OK)]++
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
			section, kind := sut.Complete, model.Complete
			switch k := rng.IntN(20); {
			case k < 5:
				section, kind = sut.Retry, model.Retry
			case k < 9 && inst.Proto.Has(sut.Renew):
				section, kind = sut.Renew, model.Renew
			}
			var applied bool
			applied, err = st.Apply(ctx, conn, section, sut.Args{ID: c.id, Gen: c.gen, Worker: name})
			out := model.Rejected
			if applied {
				out = model.Applied
			}
			mix[concurrent.MixKey(kind, out)]++
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

func rawFixtures(inst *sut.Instance, conn *pgx.Conn, ids []string, rng *rand.Rand, left *atomic.Int64, mix concurrent.Mix) error {
	st := inst.Statements
	for left.Add(-1) >= 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		id := ids[rng.IntN(len(ids))]
		var err error
		switch n := rng.IntN(100); {
		case n < 22:
			_, err = st.ReadState(ctx, conn)
			mix[concurrent.ReadKey]++
		case n < 52:
			err = st.Exec(ctx, conn, sut.Expire, sut.Args{ID: id, Worker: "harness"})
			mix[string(model.Expire)]++
		case n < 67:
			err = st.Exec(ctx, conn, sut.Due, sut.Args{ID: id, Worker: "harness"})
			mix[string(model.MakeDue)]++
		case n < 77 && inst.Proto.Has(sut.Age):
			err = st.Exec(ctx, conn, sut.Age, sut.Args{ID: id, Worker: "harness", Seconds: 18})
			mix[string(model.Age)]++
		default:
			_, err = st.ReadState(ctx, conn)
			mix[concurrent.ReadKey]++
		}
		cancel()
		if err != nil {
			return fmt.Errorf("raw fixtures: %w", err)
		}
		time.Sleep(time.Duration(200+rng.IntN(800)) * time.Microsecond)
	}
	return nil
}

// ConcurrentOnly is `outboxlab bench --only concurrent`: the three
// concurrent figures on a leased of their own, with the machine and its
// load, so that the driver can be measured without the rest of the bench.
func ConcurrentOnly(ctx context.Context, srv *pgserver.Server, histories int, progress io.Writer) (ConcurrentFigures, Machine, error) {
	m := Host(srv)
	inst, err := Install(ctx, srv, "leased")
	if err != nil {
		return ConcurrentFigures{}, m, err
	}
	defer inst.Close()
	fmt.Fprintf(progress, "bench: concurrent mode, %d histories of leased, unchecked, raw and checked\n", histories)
	f, err := Concurrent(srv, inst, histories)
	return f, m, err
}
