package outboxlab

import (
	"context"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/scenarios"
	"github.com/outboxlab/outboxlab/worker"
)

// TestKillAfterCommittedClaim is the article's process-kill test, for real:
// a child process claims in autocommit and reports the claim; only then is
// it sent SIGKILL. The exit must be by SIGKILL, the row INPROGRESS at
// generation 1, and after the lease fixture the reclaim returns
// [1, "event-001", 2].
func TestKillAfterCommittedClaim(t *testing.T) {
	inst := install(t, "leased")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := inst.Reset(ctx, scenarios.Events); err != nil {
		t.Fatal(err)
	}
	k, err := scenarios.KillClaimer(ctx, &scenarios.Env{Inst: inst, St: inst.Statements})
	if err != nil {
		t.Fatal(err)
	}
	if got := [3]any{k.First.ID, k.First.Event, k.First.Gen}; got != [3]any{"1", "event-001", int64(1)} {
		t.Errorf("child's claim %v, want [1 event-001 1]", got)
	}
	if !worker.KilledBySIGKILL(k.Exit) {
		t.Errorf("child exit %v, want death by SIGKILL", k.Exit)
	}
	if k.Persisted.Status != model.InProgress || k.Persisted.Gen != 1 || !k.Persisted.LeaseHeld {
		t.Errorf("persisted after kill: %+v, want INPROGRESS at generation 1 with a lease", k.Persisted)
	}
	if got := [3]any{k.Reclaim.ID, k.Reclaim.Event, k.Reclaim.Gen}; got != [3]any{"1", "event-001", int64(2)} {
		t.Errorf("reclaim after expiry %v, want [1 event-001 2]", got)
	}
}

// TestKillStrandsBaselineRow shows the article's first failure with a real
// kill: the baseline's claim never selects the abandoned row again.
func TestKillStrandsBaselineRow(t *testing.T) {
	inst := install(t, "baseline")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := inst.Reset(ctx, []string{"event-001"}); err != nil {
		t.Fatal(err)
	}
	k, err := scenarios.KillClaimer(ctx, &scenarios.Env{Inst: inst, St: inst.Statements})
	if err != nil {
		t.Fatal(err)
	}
	if !worker.KilledBySIGKILL(k.Exit) || k.Persisted.Status != model.InProgress {
		t.Fatalf("kill did not leave a committed claim: exit %v, row %+v", k.Exit, k.Persisted)
	}
	if k.Reclaim.Found {
		t.Fatalf("baseline reclaimed %+v; the article's baseline strands the row", k.Reclaim)
	}
}
