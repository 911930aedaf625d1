package bench

import (
	"context"
	"fmt"
	"io"
	"time"

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
	raw, mix, err := rawMix(inst, cfg, histories)
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
