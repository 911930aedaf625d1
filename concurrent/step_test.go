package concurrent

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/outboxlab/outboxlab/model"
)

// op is one recorded operation of a hand-written history.
func op(client int, call, ret int64, o model.Op, out model.Outcome) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Call: call, Return: ret, Input: Input{Op: o}, Output: Output{Out: out}}
}

var (
	claimed = func(e string, gen int64) model.Outcome { return model.Outcome{Kind: model.Claimed, Event: e, Gen: gen} }
	ok      = model.Outcome{Kind: model.OK}
	applied = model.Outcome{Kind: model.Applied}
	refused = model.Outcome{Kind: model.Rejected}
	empty   = model.Outcome{Kind: model.Empty}
	unknown = model.Outcome{Kind: model.Unknown}
)

func linearizable(t *testing.T, p model.Policy, events []string, h []porcupine.Operation) bool {
	t.Helper()
	return porcupine.CheckOperations(Model(p, events, true), h)
}

// TestStaleOutcomeBehindReclaim is the race of testdata/mutants/race_*: a stale
// complete that waits behind a reclaim's open transaction and applies
// once it commits has no linearization, under the lenient policy too; the
// same complete rejected has one (while the lock is held, or after).
func TestStaleOutcomeBehindReclaim(t *testing.T) {
	lenient := model.Policy{Order: model.FIFO, Lenient: true}
	history := func(out model.Outcome) []porcupine.Operation {
		return []porcupine.Operation{
			op(0, 0, 1, model.Op{Kind: model.ClaimOp, Worker: "w1"}, claimed("e1", 1)),
			op(2, 2, 3, model.Op{Kind: model.Expire, Event: "e1"}, ok),
			op(1, 4, 5, model.Op{Kind: model.Begin, Worker: "w2"}, claimed("e1", 2)),
			op(0, 6, 9, model.Op{Kind: model.Complete, Worker: "w1", Event: "e1", Gen: 1}, out),
			op(1, 7, 8, model.Op{Kind: model.Commit, Worker: "w2"}, ok),
		}
	}
	if linearizable(t, lenient, []string{"e1"}, history(applied)) {
		t.Error("a stale complete that landed on the new claim linearizes")
	}
	if !linearizable(t, lenient, []string{"e1"}, history(refused)) {
		t.Error("a stale complete refused behind a reclaim does not linearize")
	}
	// Before the reclaim, the lenient policy lets the expired owner finish.
	early := history(applied)[:2]
	early = append(early, op(0, 4, 5, model.Op{Kind: model.Complete, Worker: "w1", Event: "e1", Gen: 1}, applied))
	if !linearizable(t, lenient, []string{"e1"}, early) {
		t.Error("under the lenient policy an expired owner's complete before any reclaim does not linearize")
	}
}

// TestClaimSkipsOnlyRowsInFlight: a claim that passes over the first
// eligible row linearizes only when another statement was changing that
// row while it ran (MaySkip), as SKIP LOCKED does.
func TestClaimSkipsOnlyRowsInFlight(t *testing.T) {
	fifo := model.Policy{Order: model.FIFO}
	skip := func(may []string) []porcupine.Operation {
		claim := op(0, 0, 3, model.Op{Kind: model.ClaimOp, Worker: "w1"}, claimed("e2", 1))
		claim.Input = Input{Op: claim.Input.(Input).Op, MaySkip: may}
		return []porcupine.Operation{claim}
	}
	if linearizable(t, fifo, []string{"e1", "e2"}, skip(nil)) {
		t.Error("a claim that skipped e1 with nothing else running linearizes")
	}
	if !linearizable(t, fifo, []string{"e1", "e2"}, skip([]string{"e1"})) {
		t.Error("a claim that skipped e1 while a statement changed e1 does not linearize")
	}
}

// TestUnknownCommitAfterKill: a Commit whose outcome is unknown because
// its worker was killed (the transaction already rolled back) did
// nothing; a Commit reported ok after the kill has no linearization.
func TestUnknownCommitAfterKill(t *testing.T) {
	fifo := model.Policy{Order: model.FIFO}
	history := func(out model.Outcome) []porcupine.Operation {
		return []porcupine.Operation{
			op(0, 0, 1, model.Op{Kind: model.Begin, Worker: "w1"}, claimed("e1", 1)),
			op(3, 2, 3, model.Op{Kind: model.Kill, Worker: "w1"}, ok),
			op(0, 4, 5, model.Op{Kind: model.Commit, Worker: "w1"}, out),
			op(1, 6, 7, model.Op{Kind: model.ClaimOp, Worker: "w2"}, claimed("e1", 1)),
		}
	}
	if !linearizable(t, fifo, []string{"e1"}, history(unknown)) {
		t.Error("an unknown commit after its worker's kill does not linearize")
	}
	if linearizable(t, fifo, []string{"e1"}, history(ok)) {
		t.Error("a commit reported ok after its worker's kill linearizes")
	}
}

// TestShrinkKeepsTheRace: a history with the race and unrelated traffic
// around it shrinks to the race, whose witness fails on its own. The
// reclaim keeps its commit (keepsEnds): without it, the part would hold
// w2's transaction open to its end.
func TestShrinkKeepsTheRace(t *testing.T) {
	lenient := model.Policy{Order: model.FIFO, Lenient: true}
	h := []porcupine.Operation{
		op(0, 0, 1, model.Op{Kind: model.ClaimOp, Worker: "w1"}, claimed("e1", 1)),
		op(3, 0, 1, model.Op{Kind: model.ClaimOp, Worker: "w3"}, claimed("e2", 1)),
		op(3, 1, 2, model.Op{Kind: model.Complete, Worker: "w3", Event: "e2", Gen: 1}, applied),
		op(2, 2, 3, model.Op{Kind: model.Expire, Event: "e1"}, ok),
		op(1, 4, 5, model.Op{Kind: model.Begin, Worker: "w2"}, claimed("e1", 2)),
		op(3, 4, 5, model.Op{Kind: model.ClaimOp, Worker: "w3"}, empty),
		op(0, 6, 9, model.Op{Kind: model.Complete, Worker: "w1", Event: "e1", Gen: 1}, applied),
		op(1, 7, 8, model.Op{Kind: model.Commit, Worker: "w2"}, ok),
		op(3, 10, 11, model.Op{Kind: model.ClaimOp, Worker: "w3"}, empty),
	}
	mk := func(events []string) porcupine.Model { return Model(lenient, events, true) }
	witness, events, part := shrink(mk, []string{"e1", "e2"}, h, 10*time.Second)
	if porcupine.CheckOperations(mk([]string{"e1", "e2"}), witness) {
		t.Fatalf("the witness linearizes: %v", lines(witness))
	}
	want := []string{"w1.Claim() -> claimed e1 gen=1", "Expire(e1) -> ok", "w2.Begin() -> claimed e1 gen=2", "w1.Complete(e1, gen=1) -> applied", "w2.Commit() -> ok"}
	var got []string
	for _, o := range part {
		got = append(got, describe(o.Input.(Input), o.Output.(Output)))
	}
	if len(events) != 1 || len(got) > len(want) {
		t.Fatalf("shrunk to events %v and %v, want e1 and %v", events, got, want)
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Errorf("shrunk part %v lacks %q", got, w)
		}
	}
	// The verdict names the complete's own rule, as the state machine
	// would: no write before it explains it.
	b, ok := blame(lenient, events, true, part, 10*time.Second)
	if want := "stale owner's complete applied (e1 gen 1 is not the current live claim: e1 is at gen 2)"; !ok || b.Rule != want {
		t.Errorf("named %q (%v), want %q", b.Rule, ok, want)
	}
}

// TestClaimMayLeaveOutAnEnqueueItOverlapped is the history of
// testdata/libraries/fixed/pgqueuer.sql (issue 27, seed 3757742402201096):
// a batch claim pinned after an expiry, itself after an Enqueue that
// overlapped the claim, takes the expired row only. Legal: the claim's
// snapshot (or, in a Begin, its now()) may predate the new row. It
// linearizes once overlappingRows names the enqueued event; with a claim
// that did not overlap the Enqueue it still does not.
func TestClaimMayLeaveOutAnEnqueueItOverlapped(t *testing.T) {
	batch := model.Policy{Order: model.FIFO, Batch: 2}
	history := func(enqueueCall, enqueueReturn int64) []porcupine.Operation {
		h := []porcupine.Operation{
			op(1, 0, 10, model.Op{Kind: model.ClaimOp, Worker: "w2"}, claimed("e1", 1)),
			op(2, enqueueCall, enqueueReturn, model.Op{Kind: model.Enqueue, Event: "e2"}, ok),
			op(0, 25, 100, model.Op{Kind: model.ClaimOp, Worker: "w1"}, claimed("e1", 2)),
			op(3, 40, 50, model.Op{Kind: model.Expire, Event: "e1"}, ok),
		}
		in := h[2].Input.(Input)
		in.MaySkip = overlappingRows(h, 2, false)
		h[2].Input = in
		return h
	}
	if !linearizable(t, batch, []string{"e1"}, history(20, 30)) {
		t.Error("a claim that left out a row enqueued while it ran does not linearize")
	}
	if linearizable(t, batch, []string{"e1"}, history(12, 18)) {
		t.Error("a claim that left out a due row enqueued before it started linearizes")
	}
}

// TestCountShortAfterALostClaim is the history of fixed/procrastinate.sql's
// false failures (issue 27, seed 7287699291469023): for a protocol without
// a generation the driver sends its count of the claims it saw, and a lost
// claim reply that did commit leaves it one short. w1's complete of its
// second claim, sent as gen=1 while the model's row is at 2, applies, as the
// protocol's per-claim handle lets it. It linearizes (countedClaim), and so
// does the same complete refused (a protocol that fences by the count); a
// complete applied for a worker that holds no claim of the row does not.
func TestCountShortAfterALostClaim(t *testing.T) {
	fifo := model.Policy{Order: model.FIFO}
	history := func(completer string) []porcupine.Operation {
		read := porcupine.Operation{ClientId: 9, Call: 82, Return: 83, Input: Input{Observe: true},
			Output: Output{Rows: []model.RowView{{Event: "e1", Status: model.InProgress, LeaseHeld: true, LeaseExpired: true}}}}
		return []porcupine.Operation{
			op(0, 0, 70, model.Op{Kind: model.ClaimOp, Worker: "w1"}, unknown),
			op(2, 80, 81, model.Op{Kind: model.Expire, Event: "e1"}, ok),
			read,
			op(0, 184, 202, model.Op{Kind: model.ClaimOp, Worker: "w1"}, claimed("e1", 1)),
			op(1, 190, 191, model.Op{Kind: model.ClaimOp, Worker: "w2"}, empty),
			op(0, 202, 203, model.Op{Kind: model.Complete, Worker: completer, Event: "e1", Gen: 1}, applied),
		}
	}
	if !porcupine.CheckOperations(Model(fifo, []string{"e1"}, false), history("w1")) {
		t.Error("the complete of w1's second claim, sent with the short count, does not linearize")
	}
	refused := history("w1")
	refused[5].Output = Output{Out: model.Outcome{Kind: model.Rejected}}
	if !porcupine.CheckOperations(Model(fifo, []string{"e1"}, false), refused) {
		t.Error("the same complete refused, as a protocol that fences by the count refuses it, does not linearize")
	}
	if porcupine.CheckOperations(Model(fifo, []string{"e1"}, false), history("w2")) {
		t.Error("a complete applied for a worker that holds no claim of the row linearizes")
	}
}

// TestClaimAcrossARollback is the history of testdata/correct/attempts_dead
// that once failed TestFixesHoldConcurrently: w2's claim transaction held
// both rows (it buried the exhausted e1 and took e2); w1's claim, whose
// first statement buries and whose second claims, passed over e1 while w2
// held it, and took e2 once w2 had rolled back. The model has each row
// locked or free at one instant, and no single instant lets a claim take e2
// and leave e1 unburied. It linearizes because the rollback ran during the
// claim (heldByOpenTransactions); with the rollback before the claim began,
// the claim had to bury e1 and the same history does not.
func TestClaimAcrossARollback(t *testing.T) {
	budget := model.Policy{Order: model.FIFO, MaxAttempts: 1}
	history := func(rollbackCall, rollbackReturn int64) []porcupine.Operation {
		read := porcupine.Operation{ClientId: 9, Call: 40, Return: 41, Input: Input{Observe: true},
			Output: Output{Rows: []model.RowView{
				{Event: "e1", Status: model.InProgress, Gen: 1, HasGen: true, LeaseHeld: true, LeaseExpired: true},
				{Event: "e2", Status: model.InProgress, Gen: 1, HasGen: true, LeaseHeld: true},
			}}}
		h := []porcupine.Operation{
			op(0, 0, 1, model.Op{Kind: model.ClaimOp, Worker: "w1"}, claimed("e1", 1)),
			op(2, 2, 3, model.Op{Kind: model.Expire, Event: "e1"}, ok),
			op(1, 4, 5, model.Op{Kind: model.Begin, Worker: "w2"}, claimed("e2", 1)),
			op(0, 10, 20, model.Op{Kind: model.ClaimOp, Worker: "w1"}, claimed("e2", 1)),
			op(1, rollbackCall, rollbackReturn, model.Op{Kind: model.Rollback, Worker: "w2"}, ok),
			read,
		}
		in := h[3].Input.(Input)
		in.MaySkip = overlappingRows(h, 3, true)
		h[3].Input = in
		return h
	}
	if !linearizable(t, budget, []string{"e1", "e2"}, history(12, 13)) {
		t.Error("a claim that passed over a row held by a transaction that rolled back while it ran does not linearize")
	}
	if linearizable(t, budget, []string{"e1", "e2"}, history(6, 7)) {
		t.Error("a claim that left an exhausted row unburied after the transaction holding it had ended linearizes")
	}
}
