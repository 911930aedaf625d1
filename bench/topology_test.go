package bench

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRewindCycleNeedsARewind: the cycle the topology figures time is an
// error when its fault keeps the commit it must lose, so that a figure is
// never taken from a fault that rewound nothing: here a fault that does
// nothing, on a single server.
func TestRewindCycleNeedsARewind(t *testing.T) {
	srv := server(t)
	noop := func(context.Context) error { return nil }
	p := rewindCycle(srv, noop, noop)
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := p.Median(ctx, 1)
	if err == nil || !strings.Contains(err.Error(), "the one after 1 times, want 1 and 0") {
		t.Fatalf("a restart that lost nothing: error %v, want the kept commit reported", err)
	}
}

// TestFiniteHoldsTheTopologyFigures: on a local cluster a failover or
// crash cycle of 0, or round trips per step of 0, is a figure not taken,
// an error; on another server
// they are not taken, and that is no error.
func TestFiniteHoldsTheTopologyFigures(t *testing.T) {
	f := Figures{SQLFloorUS: 1, StepUS: 1, SQLShare: 1, ResetUS: 1, SchemaResetUS: 1, BaselineFindMS: 1, KillCycleMS: 1, WorkerStartCPUMS: 1,
		ConcurrentOpsPerS: 1, RawOpsPerS: 1, LinearizeMSPer1kOps: 1, ChecksPerS: map[string]float64{"1": 1},
		Machine: Machine{Server: "env"}}
	if err := f.Finite(); err != nil {
		t.Fatalf("on a user's server: %v, want no error without the topology figures", err)
	}
	f.Machine.Server = "local"
	f.FailoverCycleMS, f.RoundTripsPerStep, f.StateReadShare = 2000, 2.2, 0.47
	if err := f.Finite(); err == nil || err.Error() != "crash_cycle_ms is 0" {
		t.Fatalf("on a local cluster without crash_cycle_ms: error %v, want crash_cycle_ms is 0", err)
	}
	f.CrashCycleMS = 150
	if err := f.Finite(); err != nil {
		t.Fatalf("on a local cluster with both: %v", err)
	}
	f.RoundTripsPerStep = 0
	if err := f.Finite(); err == nil || err.Error() != "round_trips_per_step is 0" {
		t.Fatalf("on a local cluster without round_trips_per_step: error %v, want round_trips_per_step is 0", err)
	}
}
