package outboxlabtest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/outboxlabtest"
)

// staleRetry is a counterexample as OUTBOXLAB_ARTIFACTS keeps it: the
// baseline lets an expired claim's owner retry the row.
const staleRetry = `# protocol: baseline
# rule: stale owner's retry applied
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Expire(e1) -> ok
  3. w1.Retry(e1, gen=1) -> applied   // model: rejected
   ^ violation: w1.Retry(e1, gen=1) -> applied: stale owner's retry applied (e1 gen 1 is not the current live claim: its lease expired)
`

// TestReplayKeptCounterexample: Replay fails the test with the rule and
// the replayed program on the protocol the file names, and passes it on
// the protocol Protocol names; a step that cannot run is FILE:LINE.
func TestReplayKeptCounterexample(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "stale_retry.txt")
	if err := os.WriteFile(path, []byte(staleRetry), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &recorder{name: t.Name()}
	outboxlabtest.Replay(r, path)
	report := r.report()
	for _, want := range []string{"baseline: FAIL: stale owner's retry applied (replayed", "3. w1.Retry(e1, gen=1) -> applied   // model: rejected", "broken invariant: stale owner's retry applied"} {
		if !strings.Contains(report, want) {
			t.Errorf("the failure does not contain %q:\n%s", want, report)
		}
	}
	if r.fatal {
		t.Errorf("a counterexample stopped the test with Fatal; want Error")
	}
	results, err := outboxlabtest.RunReplay(path, outboxlabtest.Protocol("leased"))
	if err != nil || len(results) != 1 || results[0].Result != "pass" {
		t.Errorf("against leased: %+v, %v; want one pass", results, err)
	}
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte(strings.Replace(staleRetry, "  2. Expire(e1) -> ok\n", "", 1)+"  4. w2.Complete(e1, gen=1) -> applied\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = outboxlabtest.RunReplay(bad)
	if want := bad + ":7: step 3, w2.Complete(e1, gen=1), cannot run on baseline"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}
