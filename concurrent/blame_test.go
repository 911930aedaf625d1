package concurrent

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/outboxlab/outboxlab/model"
)

// splitRescueHistory is a history of a protocol whose rescue lists the
// expired rows in one statement and fails them by id in the next
// (max_attempts=1, policy=lenient): w3's claim of e1 is expired by the
// fixtures, the rescue reads e1 as stale, w3 renews it (applied: the
// lenient policy lets an expired owner finish until someone takes the
// row), the rescue's second statement fails e1 by id (DEAD: the attempt
// was its last), and w3's complete is refused. Around it, w1 and w2 claim
// and complete e2 and e3, and a claim and a read come after. The rescue
// spans the renew; linearized before it, it buries e1 and the renew
// cannot apply; after it, e1's lease is live and no rescue may touch it,
// so the complete should have applied. The rescue broke the rule.
func splitRescueHistory() []porcupine.Operation {
	const w1, w2, w3, fixtures, rescuer = 0, 1, 2, 3, 4
	read := porcupine.Operation{ClientId: fixtures, Call: 190, Return: 200, Input: Input{Observe: true},
		Output: Output{Rows: []model.RowView{
			{Event: "e1", Status: model.Dead, Gen: 1, HasGen: true},
			{Event: "e2", Status: model.Sent, Gen: 1, HasGen: true},
			{Event: "e3", Status: model.Sent, Gen: 1, HasGen: true},
		}}}
	h := []porcupine.Operation{
		op(w3, 0, 20, model.Op{Kind: model.Begin, Worker: "w3"}, claimed("e1", 1)),
		op(w1, 10, 30, model.Op{Kind: model.ClaimOp, Worker: "w1"}, claimed("e2", 1)),
		op(w3, 30, 40, model.Op{Kind: model.Commit, Worker: "w3"}, ok),
		op(w1, 40, 50, model.Op{Kind: model.Complete, Worker: "w1", Event: "e2", Gen: 1}, applied),
		op(fixtures, 60, 70, model.Op{Kind: model.Expire, Event: "e1"}, ok),
		op(w2, 60, 80, model.Op{Kind: model.ClaimOp, Worker: "w2"}, claimed("e3", 1)),
		op(rescuer, 80, 140, model.Op{Kind: model.Rescue}, ok),
		op(w3, 90, 100, model.Op{Kind: model.Renew, Worker: "w3", Event: "e1", Gen: 1}, applied),
		op(w2, 110, 120, model.Op{Kind: model.Complete, Worker: "w2", Event: "e3", Gen: 1}, applied),
		op(w3, 150, 160, model.Op{Kind: model.Complete, Worker: "w3", Event: "e1", Gen: 1}, refused),
		op(w1, 170, 180, model.Op{Kind: model.ClaimOp, Worker: "w1"}, empty),
		read,
	}
	// What the recorder fills in: the rows a claim or rescue may have
	// skipped for the statements that overlapped it.
	for i := range h {
		if k := h[i].Input.(Input).Op.Kind; k == model.ClaimOp || k == model.Begin || k == model.Rescue {
			in := h[i].Input.(Input)
			in.MaySkip = overlappingRows(h, i, true)
			h[i].Input = in
		}
	}
	return h
}

var splitRescuePolicy = model.Policy{Order: model.FIFO, Lenient: true, MaxAttempts: 1, Rescue: true}

// TestShrinkKeepsTheRescueAndTheRenew: the shrunk part of the split
// rescue's history keeps what explains the refused complete (the expiry,
// the renew, the rescue) instead of a part where the owner's complete is
// refused for no reason, and the verdict names the rescue's rule, as the
// state machine names it (model.ExplainRows).
func TestShrinkKeepsTheRescueAndTheRenew(t *testing.T) {
	h := splitRescueHistory()
	events := []string{"e1", "e2", "e3"}
	mk := func(ev []string) porcupine.Model { return Model(splitRescuePolicy, ev, true) }
	if porcupine.CheckOperations(mk(events), h) {
		t.Fatal("the split rescue's history linearizes")
	}
	witness, kept, part := shrink(mk, events, h, 10*time.Second)
	if porcupine.CheckOperations(mk(events), witness) {
		t.Fatalf("the witness linearizes: %v", lines(witness))
	}
	got := describeAll(part)
	for _, want := range []string{
		"w3.Begin() -> claimed e1 gen=1",
		"Expire(e1) -> ok",
		"w3.Renew(e1, gen=1) -> applied",
		"Rescue() -> ok",
		"w3.Complete(e1, gen=1) -> rejected",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("the shrunk part lacks %q:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if porcupine.CheckOperations(mk(kept), part) {
		t.Fatalf("the shrunk part linearizes:\n%s", strings.Join(got, "\n"))
	}
	if !slices.Equal(kept, []string{"e1"}) || len(part) > 6 {
		t.Errorf("shrunk to events %v and %d operations, want e1 alone and at most 6 (the five above and w3's commit):\n%s", kept, len(part), strings.Join(got, "\n"))
	}
	b, ok := blame(splitRescuePolicy, kept, true, part, 10*time.Second)
	if !ok {
		t.Fatalf("no rule named for the part:\n%s", strings.Join(got, "\n"))
	}
	if want := "rescue took e1 whose lease is live"; b.Rule != want {
		t.Errorf("named %q (%s), want %q", b.Rule, b.Detail, want)
	}
	if want := "after Rescue(), e1 is DEAD gen=1: a rescue must not change a live lease"; b.Detail != want {
		t.Errorf("detail %q, want %q", b.Detail, want)
	}
	if got, want := failureDetail(kept, len(part), b, true), "after Rescue(), e1 is DEAD gen=1: a rescue must not change a live lease; events e1 at the start; no order of the "; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "and one is if that step broke that rule") {
		t.Errorf("the failure's detail is %q, want it to start with the broken rule", got)
	}
}

func describeAll(h []porcupine.Operation) []string {
	var out []string
	for _, o := range h {
		out = append(out, describe(o.Input.(Input), o.Output.(Output)))
	}
	return out
}

// TestBlameNamesNothingUnexplained: a part that no operation breaking one
// rule explains (a read of a generation nothing claimed) is not named,
// and its detail says only why it fails.
func TestBlameNamesNothingUnexplained(t *testing.T) {
	fifo := model.Policy{Order: model.FIFO}
	read := porcupine.Operation{ClientId: 3, Call: 30, Return: 40, Input: Input{Observe: true},
		Output: Output{Rows: []model.RowView{{Event: "e1", Status: model.InProgress, Gen: 3, HasGen: true, LeaseHeld: true}}}}
	h := []porcupine.Operation{
		op(0, 0, 10, model.Op{Kind: model.ClaimOp, Worker: "w1"}, claimed("e1", 1)),
		op(0, 10, 20, model.Op{Kind: model.Renew, Worker: "w1", Event: "e1", Gen: 1}, applied),
		read,
	}
	if linearizable(t, fifo, []string{"e1"}, h) {
		t.Fatal("a read of generation 3 after one claim linearizes")
	}
	if b, ok := blame(fifo, []string{"e1"}, true, h, 10*time.Second); ok {
		t.Fatalf("named %q (%s) for a read no broken rule explains", b.Rule, b.Detail)
	}
	if got, want := failureDetail([]string{"e1"}, 3, breach{}, false), "events e1 at the start; no order of the 3 operations below, each taking effect between its call and its return, is allowed by the model, and without the one that returned last the rest is linearizable"; got != want {
		t.Errorf("detail %q, want %q", got, want)
	}
}
