package pgbosslab_test

import (
	"os"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/outboxlabtest"
	"github.com/outboxlab/outboxlab/verdict"
)

func TestMain(m *testing.M) { outboxlabtest.Main(m) }

// installed fails the test when `npm ci` has not been run here: the
// worker would die at its first import, a verdict about npm, not pg-boss.
func installed(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("node_modules/pg-boss/package.json"); err != nil {
		t.Fatalf("pg-boss is not installed: run `npm ci` in examples/pgboss first (%v)", err)
	}
}

// profile runs worker's profile as docs/libraries.md runs a library's
// (--profile --faults=false --seed 1), with 40 checks a property: a
// Node worker's step costs a process's round trip, and 40 find every
// break below at seed 1.
func profile(t *testing.T, worker string) map[string]string {
	t.Helper()
	installed(t)
	res, err := outboxlabtest.Run("pgboss.sql", outboxlabtest.Worker(worker), outboxlabtest.Profile(),
		outboxlabtest.Faults(false), outboxlabtest.Seed(1), outboxlabtest.Budget(40, 30))
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	verdict.PrintProfile(&sb, res)
	t.Log("\n" + sb.String())
	got := map[string]string{}
	for _, e := range res.Profile {
		got[e.Property] = e.Verdict
	}
	return got
}

func pin(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("the profile has %d properties, want %d: %v", len(got), len(want), got)
	}
	for p, v := range want {
		if got[p] != v {
			t.Errorf("%s %s, want %s", p, got[p], v)
		}
	}
}

// TestFencedProfile: complete, fail and touch given the job objects fetch
// returned. pg-boss 12.35.0 added the attempt fence (id and retry_count in
// the statement), so a worker whose job was expired and fetched again can
// no longer finish the newer attempt: fencing holds, where the 12.27.0
// transcription (testdata/libraries/pg-boss.sql) breaks it. What stays
// broken is what the fence does not look at: the lease (an expired job is
// finishable until a supervise pass fails it) and touch, which moves the
// heartbeat but not the started_on expiry.
func TestFencedProfile(t *testing.T) {
	pin(t, profile(t, "node worker.mjs"), map[string]string{
		"no_stranded_row": "holds", "fencing": "holds", "strict_expiry": "breaks", "terminal": "holds",
		"backoff": "holds", "one_live_owner": "breaks", "order": "holds", "claims_never_wait": "holds",
		"attempt_budget": "holds",
	})
}

// TestUnfencedProfile: the same calls given plain ids, which pg-boss
// 12.38.1 still accepts and does not fence, as every version before
// 12.35.0 did: a stale worker's complete lands on the newer attempt, as
// the transcription of 12.27.0 found.
func TestUnfencedProfile(t *testing.T) {
	pin(t, profile(t, "node worker.mjs --unfenced"), map[string]string{
		"no_stranded_row": "holds", "fencing": "breaks", "strict_expiry": "breaks", "terminal": "holds",
		"backoff": "holds", "one_live_owner": "breaks", "order": "holds", "claims_never_wait": "holds",
		"attempt_budget": "holds",
	})
}
