package outboxlab

import (
	"errors"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/machine"
)

// TestReplayRefusesWhatNoDrawSends: a replay holds a step to the
// precondition its action's draw uses (machine/steps.go). A
// worker whose complete waits on another worker's claim transaction takes
// no other step until the wait ends; the draw never sends it a claim then,
// and a strict replay refuses one, where it once sent it. The same
// program with the claim after the commit that ends the wait replays.
func TestReplayRefusesWhatNoDrawSends(t *testing.T) {
	h := harness(t, "testdata/correct/leased_renew.sql", mutantConfig())
	waiting := []string{
		"setup: 2 workers (w1 w2), events e1 e2",
		"  1. w1.Claim() -> claimed e1 gen=1",
		"  2. w2.Begin(expire e1) -> claimed e1 gen=2",
		"  3. w1.Complete(e1, gen=1) -> waiting on w2",
	}
	p, err := machine.ParseProgram(append(waiting, "  4. w1.Claim() -> claimed e2 gen=1"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Replay(p)
	var refused *machine.ReplayError
	if !errors.As(err, &refused) || refused.Step != 4 || !strings.Contains(err.Error(), "waits on another worker's open transaction") {
		t.Fatalf("a claim from a worker whose step waits: err %v, want step 4 refused\n%s", err, strings.Join(h.Program(), "\n"))
	}
	p, err = machine.ParseProgram(append(waiting,
		"  4. w2.Commit() -> ok",
		"     then w1.Complete(e1, gen=1) -> rejected",
		"  5. w1.Claim() -> claimed e2 gen=1"))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := h.Replay(p); err != nil || v != nil {
		t.Fatalf("replay: violation %v, err %v\n%s", v, err, strings.Join(h.Program(), "\n"))
	}
}
