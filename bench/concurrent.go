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
	// worker processes spent per operation of the concurrent parts
	// (PostgreSQL's left out): steadier than the rates on a shared
	// machine. WorkerCPUPerOpUS is the worker processes' part of it.
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
// fixture actor) with checking off and the raw loop, in alternation, a
// block of a few histories each, so that both see the same machine; then
// the driver with checking on, whose check time is divided by its
// operations (the drains' included). The two rates count the histories'
// concurrent parts only, resets and drains left out: the same statements,
// from as many actors. No faults (a restart would stall the figure), and
// no hold on open claim transactions: the figures are statements, not
// sleeps.
func Concurrent(srv *pgserver.Server, inst *sut.Instance, histories int) (ConcurrentFigures, error) {
	cfg := concurrent.Default()
	cfg.Faults, cfg.Hold, cfg.Histories, cfg.Duration, cfg.Seed = false, 0, histories, 10*time.Minute, 1
	f, err := rates(srv, inst, cfg, histories)
	if err != nil {
		return f, err
	}
	cfg.NoCheck = false
	checked, err := concurrent.NewRunner(srv, inst, cfg)
	if err != nil {
		return f, err
	}
	defer checked.Close()
	res := checked.Run()
	if res.Failure != nil {
		return f, failedRun(inst, res)
	}
	f.LinearizeMS = round(res.CheckTime.Seconds() * 1000 / float64(res.Ops) * 1000) // not Milliseconds(): a short run checks in under one
	return f, nil
}

func failedRun(inst *sut.Instance, res concurrent.Result) error {
	return fmt.Errorf("concurrent run of %s failed: %s: %s", inst.Proto.Name, res.Failure.Rule, res.Failure.Detail)
}

// rates runs the driver, unchecked, and the raw loop in alternation, and
// takes the figures but linearize_ms_per_1k_ops.
func rates(srv *pgserver.Server, inst *sut.Instance, cfg concurrent.Config, histories int) (ConcurrentFigures, error) {
	var f ConcurrentFigures
	failed := func(res concurrent.Result) error { return failedRun(inst, res) }
	meter := newCPUMeter(inst)
	var driverCPU, rawCPU, mark cpuSample
	// Each side's counters are read around each concurrent part.
	phase := func(total *cpuSample) func(bool) {
		return func(start bool) {
			if start {
				mark = meter.read(true)
				return
			}
			*total = total.add(meter.read(false).sub(mark))
		}
	}
	c := cfg
	c.NoCheck = true
	c.Phase = phase(&driverCPU)
	driver, err := concurrent.NewRunner(srv, inst, c)
	if err != nil {
		return f, err
	}
	defer driver.Close()
	raw, err := newRawLoop(inst, cfg)
	if err != nil {
		return f, err
	}
	defer raw.close()
	raw.phase = phase(&rawCPU)
	// A history of each first, not counted: the worker processes' and the
	// connections' start (a backend's first statements) is no operation's.
	if res := driver.RunMore(1, cfg.Duration); res.Failure != nil {
		return f, failed(res)
	}
	if err := raw.run(1); err != nil {
		return f, err
	}
	raw.busy, raw.mix = 0, concurrent.Mix{}
	driverCPU, rawCPU = cpuSample{}, cpuSample{}
	var ops int
	var opsTime time.Duration
	f.Mix = concurrent.Mix{}
	for done := 0; done < histories; {
		n := min(concurrentBlock, histories-done)
		res := driver.RunMore(n, cfg.Duration)
		if res.Failure != nil {
			return f, failed(res)
		}
		if err := raw.run(n); err != nil {
			return f, err
		}
		ops, opsTime = ops+res.ConcurrentOps, opsTime+res.ConcurrentTime
		f.Mix.Merge(res.ConcurrentMix)
		done += n
	}
	f.OpsPerS = round(float64(ops) / opsTime.Seconds())
	f.RawOpsPerS, f.RawMix = round(raw.rate()), raw.mix
	rawOps := mixTotal(raw.mix)
	f.CPUPerOpUS = perOpUS(driverCPU.self+driverCPU.children, ops)
	f.WorkerCPUPerOpUS = perOpUS(driverCPU.children, ops)
	f.RawCPUPerOpUS = perOpUS(rawCPU.self, rawOps)
	f.ServerCPUPerOpUS, f.RawServerCPUPerOpUS = perOpUS(driverCPU.server, ops), perOpUS(rawCPU.server, rawOps)
	return f, nil
}

// concurrentBlock is how many histories the driver and the raw loop run in
// turn: a block lasts well under a second, short against the swings of
// other work on a shared machine.
const concurrentBlock = 5

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
