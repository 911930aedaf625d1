package outboxlab

import (
	"context"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/bench"
	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
)

// The benchmarks time the probes `outboxlab bench` takes its figures from
// (package bench), one figure each:
//
//	go test -run '^$' -bench . -benchtime 2s
//
// The command takes them all in one run and prints the ratios issue 6
// sets targets for; these are for profiling one figure at a time
// (-cpuprofile) and for benchstat comparisons across a change.

func BenchmarkSelect1(b *testing.B) {
	srv := benchServer(b)
	p, err := bench.SelectOne(context.Background(), srv.ConnString())
	if err != nil {
		b.Fatal(err)
	}
	runProbe(b, p)
}

func BenchmarkReset(b *testing.B) {
	runProbe(b, bench.Reset(install(b, "leased")))
}

func BenchmarkSchemaReset(b *testing.B) {
	srv := benchServer(b)
	inst := install(b, "leased")
	p, err := bench.SchemaReset(context.Background(), srv.ConnString(), inst.Proto)
	if err != nil {
		b.Fatal(err)
	}
	runProbe(b, p)
}

func BenchmarkKillCycle(b *testing.B) {
	runProbe(b, bench.KillCycle(install(b, "leased")))
}

// BenchmarkStateMachineStep runs whole checks of the leased protocol until
// b.N steps have run; ns/op is the wall time per step, checks included.
func BenchmarkStateMachineStep(b *testing.B) {
	srv := benchServer(b)
	h := machine.New(srv, install(b, "leased"), bench.Config())
	b.Cleanup(h.Close)
	if err := bench.RunChecks(h, 1, 1, h.Check); err != nil { // spawns the workers
		b.Fatal(err)
	}
	_, steps0, _ := h.Stats()
	sql0 := h.SQLTime()
	b.ResetTimer()
	start := time.Now()
	for seed := uint64(2); ; seed++ {
		_, steps, _ := h.Stats()
		if steps-steps0 >= b.N {
			break
		}
		if err := bench.RunChecks(h, 1, seed, h.Check); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	elapsed := time.Since(start)
	_, steps, _ := h.Stats()
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(steps-steps0), "ns/step")
	b.ReportMetric(float64(h.SQLTime()-sql0)/float64(elapsed), "sql-share")
}

// BenchmarkBaselineCounterexample searches the baseline from a new seed
// each op, timing the first counterexample and its shrinking.
func BenchmarkBaselineCounterexample(b *testing.B) {
	srv := benchServer(b)
	inst := install(b, "baseline")
	var find, minimal time.Duration
	for i := 0; i < b.N; i++ {
		c, err := bench.FindAndShrink(srv, inst, bench.Config(), uint64(i+1))
		if err != nil {
			b.Fatal(err)
		}
		find, minimal = find+c.Find, minimal+c.Minimal
	}
	n := float64(b.N) * float64(time.Millisecond)
	b.ReportMetric(float64(find)/n, "find-ms")
	b.ReportMetric(float64(minimal)/n, "shrink-ms")
}

// BenchmarkChecks and BenchmarkChecksParallel2 are checks_per_s with one
// and two state machines, each in a schema of its own; ns/op is wall time
// per check, all machines together.
func BenchmarkChecks(b *testing.B)          { benchmarkChecks(b, 1) }
func BenchmarkChecksParallel2(b *testing.B) { benchmarkChecks(b, 2) }

func benchmarkChecks(b *testing.B, parallel int) {
	srv := benchServer(b)
	var insts []*sut.Instance
	for range parallel {
		insts = append(insts, install(b, "leased"))
	}
	b.ResetTimer()
	rate, err := bench.Throughput(context.Background(), srv, insts, bench.Config(), 0, b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(rate, "checks/s")
}

// runProbe times a probe's Run b.N times, its Before outside the timer.
func runProbe(b *testing.B, p *bench.Probe) {
	b.Helper()
	b.Cleanup(p.Close)
	ctx := context.Background()
	if _, err := p.Median(ctx, 1); err != nil { // warm: connection, statement cache
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if p.Before != nil {
			b.StopTimer()
			if err := p.Before(ctx); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if err := p.Run(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func benchServer(b *testing.B) *pgserver.Server {
	b.Helper()
	srv, err := pgserver.Shared()
	if err != nil {
		b.Fatal(err)
	}
	return srv
}
