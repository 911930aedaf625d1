package outboxlab

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/concurrent"
	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/scenarios"
	"github.com/outboxlab/outboxlab/sut"
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

// TestConcurrentFaultStorm: real worker processes claim (in autocommit
// and in open transactions held a moment), complete, retry and renew at
// once, each through its own proxy, while a fixture actor expires, ages
// and makes rows due (and rescues) and reads the rows, and a fault loop
// SIGKILLs workers (they respawn), pauses them (SIGSTOP, SIGCONT), loses
// their requests and replies, and restarts the server. Every operation is
// recorded with its call and return time, and each short history, ended
// by a drain, must be linearizable against the model (concurrent.Model,
// the same model.State the state machine steps), faults' unknown outcomes
// as nondeterministic steps. One check for any protocol: no trigger or
// history table of its own. It stops by itself: a budget of histories, of
// operations per history, and of time.
func TestConcurrentFaultStorm(t *testing.T) {
	srv, err := pgserver.Shared()
	if err != nil {
		t.Fatal(err)
	}
	for _, protocol := range []string{"leased", "testdata/correct/lenient_generation.sql", "testdata/correct/rescue_dead.sql"} {
		t.Run(strings.TrimSuffix(filepath.Base(protocol), ".sql"), func(t *testing.T) {
			inst := install(t, protocol)
			cfg := concurrent.Default()
			cfg.Histories, cfg.Ops, cfg.Duration, cfg.Seed, cfg.HTMLDir = 4, 150, 20*time.Second, 7, t.TempDir()
			res := runLinearizable(t, srv, inst, cfg)
			t.Logf("%d histories, %d operations, faults %v", res.Histories, res.Ops, res.Faults)
			if res.Histories < cfg.Histories {
				t.Errorf("%d histories of %d ran", res.Histories, cfg.Histories)
			}
			for _, kind := range []string{"kill", "pause", "request_lost", "reply_lost", "db_restart"} {
				if res.Faults[kind] == 0 && (kind != "db_restart" || srv.Owned()) {
					t.Errorf("the storm never injected %s", kind)
				}
			}
		})
	}
}

// runLinearizable runs inst's concurrent histories and fails the test, with
// the failing history and its witness, unless every one is linearizable.
func runLinearizable(t *testing.T, srv *pgserver.Server, inst *sut.Instance, cfg concurrent.Config) concurrent.Result {
	t.Helper()
	r, err := concurrent.NewRunner(srv, inst, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res := r.Run()
	if f := res.Failure; f != nil {
		t.Fatalf("history %d: %s: %s\n%s\nwitness: %s", f.History, f.Rule, f.Detail, strings.Join(f.Ops, "\n"), f.WitnessHTML)
	}
	return res
}
