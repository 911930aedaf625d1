package riverlab_test

import (
	"strings"
	"testing"

	"example.com/riverlab"
	"github.com/outboxlab/outboxlab/driver"
	"github.com/outboxlab/outboxlab/outboxlabtest"
	"github.com/outboxlab/outboxlab/verdict"
)

// TestMain registers River before outboxlabtest.Main: the worker
// processes are this binary re-executed, so they register it too.
func TestMain(m *testing.M) {
	p, err := riverlab.New()
	if err != nil {
		panic(err)
	}
	driver.Register("river", p)
	outboxlabtest.Main(m)
}

// TestStaleCompletion: River's own code lets a worker whose job the
// rescuer took back finish it on top of the job's next attempt
// (JobSetStateIfRunningMany checks that the job is running, not which
// attempt is), as river.sql does. The search must find it and shrink it
// to a short program. Seed 2 finds it at its 34th check and shrinks it
// to the rescuer's path (6 steps: claim, expire, rescue, make due, claim
// again, the stale complete). Other seeds (3, 6, 7) find a stale
// owner's outcome by a shorter path that River's executor never takes:
// the worker's own earlier Retry made the job due again, and it then
// reports on it again (5 steps), one execution reporting twice. The
// shrinking keeps the shortest program that breaks the rule, so which
// path a seed ends on follows the program its search found.
func TestStaleCompletion(t *testing.T) {
	res, err := outboxlabtest.RunDriver("river", outboxlabtest.Seed(2), outboxlabtest.Budget(100, 30))
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	verdict.Print(&sb, res)
	t.Log("\n" + sb.String())
	if res.Result != verdict.Fail || res.Violation != "stale owner's complete applied" {
		t.Fatalf("got %s %q, want a stale owner's complete applied", res.Result, res.Violation)
	}
	if res.CounterexampleSteps > 8 {
		t.Errorf("the counterexample has %d steps, want at most 8", res.CounterexampleSteps)
	}
	program := strings.Join(res.Counterexample, "\n")
	if !strings.Contains(program, "Rescue()") {
		t.Errorf("the counterexample does not go through the rescuer:\n%s", program)
	}
}

// TestProfile is River's own code's profile, as docs/libraries.md runs
// river.sql's (--profile --faults=false --seed 1): a verdict per property,
// logged, and pinned where docs/river.md explains it.
func TestProfile(t *testing.T) {
	res, err := outboxlabtest.RunDriver("river", outboxlabtest.Profile(), outboxlabtest.Seed(1), outboxlabtest.Faults(false))
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	verdict.PrintProfile(&sb, res)
	t.Log("\n" + sb.String())
	// river.sql's profile (docs/libraries.md) but terminal, which River
	// v0.51.2's JobRescueMany holds (docs/river.md).
	want := map[string]string{
		"no_stranded_row": "holds", "fencing": "breaks", "strict_expiry": "breaks", "terminal": "holds",
		"backoff": "holds", "one_live_owner": "holds", "order": "holds", "claims_never_wait": "holds",
		"attempt_budget": "breaks",
	}
	if len(res.Profile) != len(want) {
		t.Fatalf("the profile has %d properties, want %d", len(res.Profile), len(want))
	}
	for _, e := range res.Profile {
		if want[e.Property] != e.Verdict {
			t.Errorf("%s %s, want %s", e.Property, e.Verdict, want[e.Property])
		}
	}
}
