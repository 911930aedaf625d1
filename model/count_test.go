package model

import "testing"

// TestRejectedForCount: an outcome sent with a count its claim does not
// have in a state may be refused there; one sent with the claim's own
// count, or a step that sends none, is the model's to judge as always.
func TestRejectedForCount(t *testing.T) {
	s := State{
		Rows:   []Row{{Event: "e1", Status: InProgress, Gen: 3, Owner: 1, LeaseLive: true}},
		Claims: []Claim{{Worker: "w1", Event: "e1", Gen: 3, ID: 1}},
	}
	own := Op{Kind: Complete, Worker: "w1", Event: "e1", Gen: 3, Claim: 1}
	short := own
	short.Gen = 2
	if got := s.RejectedForCount(own); got != nil {
		t.Errorf("the claim's own count: %v, want nil", got)
	}
	if got := s.RejectedForCount(short); len(got) != 1 || got[0].Out.Kind != Rejected || got[0].Next.Key() != s.Key() {
		t.Errorf("a count one short: %v, want one rejection that leaves the state", got)
	}
	if got := s.RejectedForCount(Op{Kind: Expire, Event: "e1", Gen: 2}); got != nil {
		t.Errorf("a fixture: %v, want nil", got)
	}
	if got := s.RejectedForCount(Op{Kind: Complete, Worker: "w2", Event: "e1", Gen: 2, Claim: 7}); got != nil {
		t.Errorf("a claim the state does not hold: %v, want nil", got)
	}
}
