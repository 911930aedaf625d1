package model

import "testing"

// TestBeginExpiring: w2's Begin(expire e1) takes e1 while others still see
// w1's lease live, so w1's complete waits on w2 (rather than being refused
// at once); once w2 commits, e1 is w2's at gen 2 and w1's complete may only
// be rejected. A rollback leaves w1's live claim as it was.
func TestBeginExpiring(t *testing.T) {
	s := NewWith(Policy{Order: FIFO})
	s = mustStep(t, s, Op{Kind: Enqueue, Event: "e1"}, OK)
	s = mustStep(t, s, Op{Kind: ClaimOp, Worker: "w1"}, Claimed)
	open := mustStep(t, s, Op{Kind: Begin, Worker: "w2", Event: "e1"}, Claimed)
	if r := open.Rows[0]; !r.LeaseLive || r.Gen != 1 || r.LockedBy != "w2" {
		t.Fatalf("while w2's transaction is open, e1 is %+v: want w1's live claim at gen 1, locked by w2", r)
	}
	stale := Op{Kind: Complete, Worker: "w1", Event: "e1", Gen: 1}
	if on := open.WaitsOn(stale); on != "w2" {
		t.Fatalf("w1's complete waits on %q, want w2", on)
	}
	committed := mustStep(t, open, Op{Kind: Commit, Worker: "w2"}, OK)
	if r := committed.Rows[0]; r.Gen != 2 || !r.LeaseLive || r.LockedBy != "" {
		t.Fatalf("after w2's commit e1 is %+v: want w2's live claim at gen 2", r)
	}
	for _, tr := range committed.Step(stale) {
		if tr.Out.Kind != Rejected {
			t.Errorf("after the reclaim w1's complete may end %s", tr.Out)
		}
	}
	rolled := mustStep(t, open, Op{Kind: Rollback, Worker: "w2"}, OK)
	if rolled.Key() != s.Key() {
		t.Errorf("after the rollback the state is %s, want %s", rolled.Key(), s.Key())
	}
	mustStep(t, rolled, stale, Applied)
	if got := open.Step(Op{Kind: Begin, Worker: "w3", Event: "e1"}); got != nil {
		t.Errorf("a second Begin(expire e1) while w2 holds e1 steps: %v", got)
	}
}
