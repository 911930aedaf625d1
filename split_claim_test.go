package outboxlab

import (
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/machine"
)

// TestSplitClaimReplays: the claim split's race, as a program, replays to
// the mutant's violation (its claim buries by id the row the owner
// finished between the claim's statements) and passes on the twin that
// looks again, where the claim comes back empty and e1 stays SENT.
func TestSplitClaimReplays(t *testing.T) {
	program := []string{
		"setup: 2 workers (w1 w2), events e1",
		"  1. w1.Claim() -> claimed e1 gen=1",
		"  2. Expire(e1) -> ok",
		"  3. w1.Claim() -> claimed e1 gen=2",
		"  4. Expire(e1) -> ok",
		"  5. w2.Claim() [1/3] -> ok",
		"  6. w1.Complete(e1, gen=2) -> applied",
		"  7. w2.Claim() [3/3] -> empty",
	}
	p, err := machine.ParseProgram(program)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ protocol, rule string }{
		{"testdata/mutants/split_claim_bury_read_then_write.sql", "SENT is terminal: e1 went SENT -> DEAD"},
		{"testdata/correct/split_claim_bury_rechecked.sql", ""},
	} {
		h := harness(t, tc.protocol, mutantConfig())
		v, err := h.Replay(p)
		if err != nil {
			t.Fatalf("%s: %v", tc.protocol, err)
		}
		got := ""
		if v != nil {
			got = v.Rule
		}
		if got != tc.rule {
			t.Errorf("%s: replay's violation %q, want %q\n%s", tc.protocol, got, tc.rule, strings.Join(h.Program(), "\n"))
		}
	}
}
