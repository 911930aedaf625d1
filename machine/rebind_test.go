package machine

import (
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/model"
)

// TestRenameClaimedFollowsTheRowTheClaimTook: a claim recorded as taking
// e2 that took e1 swaps e1 and e2 in the steps after it (their ops and
// their recorded claims), leaves the steps before it, an enqueue and other
// events alone, and does not touch the program it was given. A claim that
// took what the record says renames nothing.
func TestRenameClaimedFollowsTheRowTheClaimTook(t *testing.T) {
	p, err := ParseProgram(strings.Split(`setup: 2 workers (w1 w2), events e1 e2 e3
  1. w1.Claim() -> claimed e2 gen=1
  2. w1.Retry(e2, gen=1) -> applied
  3. MakeDue(e2) -> ok
  4. w2.Claim() -> claimed e2 gen=2
  5. Age(e1) -> ok
  6. w1.Complete(e3, gen=1) -> applied`, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	before := p.String()
	rest := append([]Step(nil), p.Steps[1:]...)
	renameClaimed(rest, p.Steps[0], model.Outcome{Kind: model.Claimed, Event: "e1", Gen: 1})
	var got []string
	for _, s := range rest {
		got = append(got, s.Op.Event+":"+s.Out.Event)
	}
	if want := "e1::e1:::e1:e2::e3:"; strings.Join(got, ":") != want { // op:claimed, per step
		t.Errorf("events after the rename %q, want %q", strings.Join(got, ":"), want)
	}
	if p.String() != before {
		t.Errorf("the program given changed:\n%s\nwant:\n%s", p.String(), before)
	}
	same := append([]Step(nil), p.Steps[1:]...)
	renameClaimed(same, p.Steps[0], model.Outcome{Kind: model.Claimed, Event: "e2", Gen: 1})
	if (Program{Workers: p.Workers, Events: p.Events, Steps: append(p.Steps[:1:1], same...)}).String() != before {
		t.Errorf("a claim that took the recorded row renamed steps")
	}
}
