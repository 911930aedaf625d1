// Package bench measures the suite against the physical limit (a SELECT 1
// round trip) and against the article's way of testing (a schema per test).
// `outboxlab bench` and the go test benchmarks in bench_test.go time the
// same probes; Run takes every figure in one run against one server.
package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
)

// Figures are the measurements, as `outboxlab bench --json` prints them.
type Figures struct {
	SQLFloorUS float64 `json:"sql_floor_us"` // median SELECT 1 round trip
	StepUS     float64 `json:"step_us"`      // median over checks of check time / steps
	// ExternalStepUS is StepUS through a worker executable, the leased
	// relay in Python (external.go): measured where the checkout's
	// examples/python is.
	ExternalStepUS   float64 `json:"external_step_us,omitempty"`
	SQLShare         float64 `json:"sql_share"`          // state machine time waiting on PostgreSQL
	ResetUS          float64 `json:"reset_us"`           // median per-check reset
	SchemaResetUS    float64 `json:"schema_reset_us"`    // median create schema, table, drop schema
	BaselineFindMS   float64 `json:"baseline_find_ms"`   // median time to the first counterexample
	BaselineShrinkMS float64 `json:"baseline_shrink_ms"` // median time from there to its minimal form
	KillCycleMS      float64 `json:"kill_cycle_ms"`      // median spawn, connect, claim, SIGKILL
	// WorkerStartCPUMS is the median CPU one worker process for a protocol
	// file costs from its exec to its first answer (worker.StartCPU).
	WorkerStartCPUMS float64 `json:"worker_start_cpu_ms"`
	// ChecksPerS is the state machine's throughput by number of parallel
	// runs ("1", "2"), each run in a schema of its own.
	ChecksPerS map[string]float64 `json:"checks_per_s"`
	Machine    Machine            `json:"machine"`
	// The concurrent mode (check --concurrent) on leased: its driver's
	// operations per second unchecked, the same statements from plain pgx
	// connections, and porcupine's time per 1000 operations (concurrent.go).
	ConcurrentOpsPerS   float64 `json:"concurrent_ops_per_s"`
	RawOpsPerS          float64 `json:"raw_ops_per_s"`
	LinearizeMSPer1kOps float64 `json:"linearize_ms_per_1k_ops"`
	// The server faults of the rewinding topologies, each the median of a
	// few cycles on a deployment started for it (topology.go): measured
	// only when the server is a local cluster, whose binaries build them.
	FailoverCycleMS float64 `json:"failover_cycle_ms,omitempty"` // async-standby: MarkDurable, Stall, Failover, reconnect
	CrashCycleMS    float64 `json:"crash_cycle_ms,omitempty"`    // async-commit: MarkDurable, Crash, reconnect
	// A step's statements, counted by the server of a local cluster of
	// their own (roundtrips.go): measured only where the topology figures
	// are.
	RoundTripsPerStep float64 `json:"round_trips_per_step,omitempty"` // statements executed per step, an upper bound of round trips
	StateReadShare    float64 `json:"state_read_share,omitempty"`     // the harness's state reads among them
}

// Options is a run's budget: the command's full run and the test's quick
// one differ here only.
type Options struct {
	Samples       int           // SELECT 1 and reset runs, median of
	StartSamples  int           // worker processes started for worker_start_cpu_ms
	SchemaSamples int           // schema create-and-drop runs
	KillSamples   int           // kill cycles
	Checks        int           // state machine checks for step_us and sql_share
	Seeds         []uint64      // baseline searches, one per seed
	ThroughputFor time.Duration // per parallelism
	Parallel      []int         // parallel runs for checks_per_s
	Config        machine.Config
	// ConcurrentHistories is how many histories each concurrent figure
	// runs.
	ConcurrentHistories int
	// TopologyCycles is how many failover and crash cycles each topology
	// figure is the median of.
	TopologyCycles int
}

// Full is the budget of `outboxlab bench`: about 75 seconds, most of it
// shrinking the baseline's counterexamples, and the two deployments of
// the topology figures.
func Full() Options {
	return Options{Samples: 2000, StartSamples: 30, SchemaSamples: 200, KillSamples: 30, Checks: 200,
		Seeds: []uint64{1, 2, 3, 4, 5}, ThroughputFor: 5 * time.Second, Parallel: []int{1, 2},
		Config: Config(), ConcurrentHistories: 30, TopologyCycles: 5}
}

// Quick runs every code path once or a few times: a test that the figures
// can still be taken, not a measurement.
func Quick() Options {
	return Options{Samples: 5, StartSamples: 1, SchemaSamples: 2, KillSamples: 1, Checks: 2,
		Seeds: []uint64{1}, ThroughputFor: 100 * time.Millisecond, Parallel: []int{1, 2},
		Config: Config(), ConcurrentHistories: 1, TopologyCycles: 1}
}

// Config is the CI configuration without faults: a fault's cost is the
// proxy's and the server restart's, not the suite's, and a restart would
// stall every other figure.
func Config() machine.Config {
	cfg := machine.Default()
	cfg.Faults = false
	return cfg
}

// Install puts a built-in or file protocol in a fresh schema of srv.
func Install(ctx context.Context, srv *pgserver.Server, protocol string) (*sut.Instance, error) {
	p, err := sut.Resolve(protocol)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	inst, err := sut.Install(ctx, srv.ConnString(), p)
	if err != nil {
		return nil, fmt.Errorf("install %s: %w", protocol, err)
	}
	return inst, nil
}

// Target is one of issue 6's goals, judged on one run's figures.
type Target struct {
	Name  string  // what is compared, as a formula of the figures
	Value float64 // its value in this run
	Want  string  // the goal
	Met   bool
}

// Targets judges the figures: harness overhead at most 30%, the reset at
// least ten times cheaper than a schema per check, the baseline's
// counterexample found and shrunk in under two seconds, a worker's start
// at most 15 ms of CPU and one harness at 100 checks a second or more.
func (f Figures) Targets() []Target {
	ratio := f.SchemaResetUS / f.ResetUS
	total := f.BaselineFindMS + f.BaselineShrinkMS
	one := f.ChecksPerS["1"]
	return []Target{
		{"worker_start_cpu_ms", f.WorkerStartCPUMS, "<= 15", f.WorkerStartCPUMS <= 15},
		{"checks_per_s[1]", one, ">= 100", one >= 100},
		{"sql_share", f.SQLShare, ">= 0.7", f.SQLShare >= 0.7},
		{"schema_reset_us / reset_us", ratio, ">= 10", ratio >= 10},
		{"baseline_find_ms + baseline_shrink_ms", total, "< 2000", total < 2000},
		{"concurrent_ops_per_s / raw_ops_per_s", f.ConcurrentOpsPerS / f.RawOpsPerS, ">= 0.5", f.ConcurrentOpsPerS >= 0.5*f.RawOpsPerS},
	}
}

// Finite reports a figure that is not a measurement: NaN, infinite,
// negative, or zero (baseline_shrink_ms may be).
func (f Figures) Finite() error {
	for name, v := range map[string]float64{
		"sql_floor_us": f.SQLFloorUS, "step_us": f.StepUS, "sql_share": f.SQLShare,
		"reset_us": f.ResetUS, "schema_reset_us": f.SchemaResetUS,
		"baseline_find_ms": f.BaselineFindMS, "baseline_shrink_ms": f.BaselineShrinkMS,
		"kill_cycle_ms":        f.KillCycleMS,
		"worker_start_cpu_ms":  f.WorkerStartCPUMS,
		"concurrent_ops_per_s": f.ConcurrentOpsPerS, "raw_ops_per_s": f.RawOpsPerS,
		"linearize_ms_per_1k_ops": f.LinearizeMSPer1kOps,
	} {
		// baseline_shrink_ms is 0 when the first counterexample was minimal.
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v == 0 && name != "baseline_shrink_ms" {
			return fmt.Errorf("%s is %v", name, v)
		}
	}
	if f.MeasuresTopologies() {
		for name, v := range map[string]float64{"failover_cycle_ms": f.FailoverCycleMS, "crash_cycle_ms": f.CrashCycleMS,
			"round_trips_per_step": f.RoundTripsPerStep, "state_read_share": f.StateReadShare} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
				return fmt.Errorf("%s is %v", name, v)
			}
		}
	}
	if len(f.ChecksPerS) == 0 {
		return fmt.Errorf("checks_per_s is empty")
	}
	for p, v := range f.ChecksPerS {
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return fmt.Errorf("checks_per_s[%s] is %v", p, v)
		}
	}
	return nil
}

// MeasuresTopologies reports whether the run takes the topology figures
// and the round trips: only on a local cluster, whose binaries build the
// deployments and the counting cluster (not on a user's server or in
// Docker).
func (f Figures) MeasuresTopologies() bool { return f.Machine.Server == "local" }

func firstError(fns ...func() error) error {
	for _, fn := range fns {
		if err := fn(); err != nil {
			return err
		}
	}
	return nil
}

func us(d time.Duration) float64 { return round(float64(d) / float64(time.Microsecond)) }
func ms(d time.Duration) float64 { return round(float64(d) / float64(time.Millisecond)) }

// round keeps three significant decimals: the figures are noisier than that.
func round(x float64) float64 { return math.Round(x*1000) / 1000 }

func firstLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}
