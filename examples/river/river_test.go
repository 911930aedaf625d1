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
// to a short program.
func TestStaleCompletion(t *testing.T) {
	res, err := outboxlabtest.RunDriver("river", outboxlabtest.Seed(1), outboxlabtest.Budget(100, 30))
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	verdict.Print(&sb, res)
	t.Log("\n" + sb.String())
	if res.Result != verdict.Fail || !strings.HasPrefix(res.Violation, "stale owner's") {
		t.Fatalf("got %s %q, want a stale owner's complete or retry applied", res.Result, res.Violation)
	}
	if res.CounterexampleSteps > 8 {
		t.Errorf("the counterexample has %d steps, want at most 8", res.CounterexampleSteps)
	}
}
