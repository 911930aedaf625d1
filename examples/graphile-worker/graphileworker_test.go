package graphileworkerlab_test

import (
	"os"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/outboxlabtest"
	"github.com/outboxlab/outboxlab/verdict"
)

func TestMain(m *testing.M) { outboxlabtest.Main(m) }

// TestProfile is graphile-worker's own code's profile, as docs/libraries.md
// runs a library's (--profile --faults=false --seed 1), with 40 checks a
// property: a Node worker's step costs a process's round trip, and 40 find
// every break below at seed 1. It is the 0.17.3 transcription's
// (testdata/libraries/graphile-worker.sql): the worker pool's complete
// deletes the job by id whoever holds it, and its fail checks the pool id
// but not the attempt, so a stale owner's outcome lands on a newer attempt,
// or on a job a fail made permanently failed.
func TestProfile(t *testing.T) {
	if _, err := os.Stat("node_modules/graphile-worker/package.json"); err != nil {
		t.Fatalf("graphile-worker is not installed: run `npm ci` in examples/graphile-worker first (%v)", err)
	}
	res, err := outboxlabtest.Run("graphile-worker.sql", outboxlabtest.Worker("node worker.mjs"), outboxlabtest.Profile(),
		outboxlabtest.Faults(false), outboxlabtest.Seed(1), outboxlabtest.Budget(40, 30))
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	verdict.PrintProfile(&sb, res)
	t.Log("\n" + sb.String())
	want := map[string]string{
		"no_stranded_row": "holds", "fencing": "breaks", "strict_expiry": "breaks", "terminal": "breaks",
		"backoff": "holds", "one_live_owner": "holds", "order": "holds", "claims_never_wait": "holds",
		"attempt_budget": "holds",
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
