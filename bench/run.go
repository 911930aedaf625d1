package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"time"

	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
)

// Run takes every figure against srv, saying what it measures on progress.
func Run(ctx context.Context, srv *pgserver.Server, opt Options, progress io.Writer) (Figures, error) {
	r := &runner{ctx: ctx, srv: srv, opt: opt, progress: progress,
		f: Figures{ChecksPerS: map[string]float64{}, Machine: Host(srv)}}
	defer r.close()
	err := firstError(r.install, r.sqlFigures, r.workerStart, r.killCycle, r.stateMachine, r.externalStep, r.baseline, r.throughput, r.concurrent, r.roundTrips, r.topologies)
	return r.f, err
}

// runner is one Run: the protocols installed for it and the figures so far.
type runner struct {
	ctx      context.Context
	srv      *pgserver.Server
	opt      Options
	progress io.Writer
	leased   []*sut.Instance // one per parallel run
	base     *sut.Instance
	f        Figures
}

func (r *runner) install() error {
	n := 1
	for _, p := range r.opt.Parallel {
		n = max(n, p)
	}
	for range n {
		inst, err := Install(r.ctx, r.srv, "leased")
		if err != nil {
			return err
		}
		r.leased = append(r.leased, inst)
	}
	var err error
	r.base, err = Install(r.ctx, r.srv, "baseline")
	return err
}

func (r *runner) close() {
	for _, inst := range r.leased {
		inst.Close()
	}
	if r.base != nil {
		r.base.Close()
	}
}

// step says what is measured next and wraps its error with it.
func (r *runner) step(what string, fn func() error) error {
	fmt.Fprintf(r.progress, "bench: %s\n", what)
	if err := fn(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// median opens a probe, takes the median of n runs and closes it.
func (r *runner) median(what string, n int, open func() (*Probe, error)) (d time.Duration, err error) {
	err = r.step(what, func() error {
		p, err := open()
		if err != nil {
			return err
		}
		defer p.Close()
		d, err = p.Median(r.ctx, n)
		return err
	})
	return d, err
}

func (r *runner) sqlFigures() error {
	cs := r.srv.ConnString()
	floor, err := r.median("SELECT 1 round trip", r.opt.Samples, func() (*Probe, error) { return SelectOne(r.ctx, cs) })
	if err != nil {
		return err
	}
	reset, err := r.median("per-check reset", r.opt.Samples, func() (*Probe, error) { return Reset(r.leased[0]), nil })
	if err != nil {
		return err
	}
	schema, err := r.median("schema per check", r.opt.SchemaSamples, func() (*Probe, error) { return SchemaReset(r.ctx, cs, r.leased[0].Proto) })
	if err != nil {
		return err
	}
	r.f.SQLFloorUS, r.f.ResetUS, r.f.SchemaResetUS = us(floor), us(reset), us(schema)
	return nil
}

func (r *runner) workerStart() error {
	return r.step(fmt.Sprintf("worker start-up CPU, %d processes", r.opt.StartSamples), func() error {
		inst := r.leased[0]
		var cpu []time.Duration
		for range max(r.opt.StartSamples, 1) {
			d, exe, err := worker.StartCPU(worker.Spec{Name: "w1", ConnString: inst.ConnString, Statements: inst.Statements})
			if err != nil {
				return err
			}
			cpu, r.f.Machine.Worker = append(cpu, d), filepath.Base(exe)
		}
		r.f.WorkerStartCPUMS = ms(median(cpu))
		return nil
	})
}

func (r *runner) killCycle() error {
	d, err := r.median("kill cycle", r.opt.KillSamples, func() (*Probe, error) { return KillCycle(r.leased[0]), nil })
	r.f.KillCycleMS = ms(d)
	return err
}

func (r *runner) stateMachine() error {
	return r.step(fmt.Sprintf("state machine, %d checks of leased", r.opt.Checks), func() error {
		s, err := StateMachine(r.srv, r.leased[0], r.opt.Config, r.opt.Checks, 1)
		r.f.StepUS, r.f.SQLShare = us(s.PerStep), round(s.SQLShare)
		return err
	})
}

func (r *runner) baseline() error {
	return r.step(fmt.Sprintf("baseline counterexample, %d seeds", len(r.opt.Seeds)), func() error {
		var finds, minimal []time.Duration
		for _, seed := range r.opt.Seeds {
			c, err := FindAndShrink(r.srv, r.base, r.opt.Config, seed)
			if err != nil {
				return err
			}
			finds, minimal = append(finds, c.Find), append(minimal, c.Minimal)
		}
		r.f.BaselineFindMS, r.f.BaselineShrinkMS = ms(median(finds)), ms(median(minimal))
		return nil
	})
}

func (r *runner) throughput() error {
	for _, p := range r.opt.Parallel {
		err := r.step(fmt.Sprintf("throughput, %d parallel for %v", p, r.opt.ThroughputFor), func() error {
			rate, err := Throughput(r.ctx, r.srv, r.leased[:p], r.opt.Config, r.opt.ThroughputFor, 0)
			r.f.ChecksPerS[strconv.Itoa(p)] = math.Round(rate*10) / 10
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) concurrent() error {
	return r.step(fmt.Sprintf("concurrent mode, %d histories of leased, unchecked, raw and checked", r.opt.ConcurrentHistories), func() error {
		c, err := Concurrent(r.srv, r.leased[0], r.opt.ConcurrentHistories)
		r.f.ConcurrentOpsPerS, r.f.RawOpsPerS, r.f.LinearizeMSPer1kOps = c.OpsPerS, c.RawOpsPerS, c.LinearizeMS
		return err
	})
}

// roundTrips counts a step's statements on a counting cluster of its own,
// after the figures it would disturb.
func (r *runner) roundTrips() error {
	if !r.f.MeasuresTopologies() {
		fmt.Fprintf(r.progress, "bench: round trips per step: not measured, the server is not a local cluster (%s)\n", r.srv.Source)
		return nil
	}
	return r.step(fmt.Sprintf("round trips per step, %d checks of leased on a counting cluster", r.opt.Checks), func() error {
		rt, err := CountRoundTrips(r.ctx, r.opt.Config, r.opt.Checks, 1)
		r.f.RoundTripsPerStep, r.f.StateReadShare = round(rt.PerStep), round(rt.StateReadShare)
		return err
	})
}

// topologies times the failover and crash cycles, last: each starts and
// stops a deployment of its own, which would disturb the figures before.
func (r *runner) topologies() error {
	if !r.f.MeasuresTopologies() {
		fmt.Fprintf(r.progress, "bench: failover and crash cycles: not measured, the server is not a local cluster (%s)\n", r.srv.Source)
		return nil
	}
	for _, c := range []struct {
		topo  pgserver.Topology
		what  string
		cycle func(*pgserver.Server) *Probe
		ms    *float64
	}{
		{pgserver.AsyncStandby, "failover cycle", FailoverCycle, &r.f.FailoverCycleMS},
		{pgserver.AsyncCommit, "crash cycle", CrashCycle, &r.f.CrashCycleMS},
	} {
		err := r.step(fmt.Sprintf("%s on %s, %d cycles", c.what, c.topo, r.opt.TopologyCycles), func() error {
			d, err := topologyCycle(r.ctx, c.topo, r.opt.TopologyCycles, c.cycle)
			*c.ms = ms(d)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
