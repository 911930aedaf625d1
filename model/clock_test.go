package model

import "testing"

// TestRunOut: every subset of the named live leases run out, s first; a
// row without a live lease and a session lease are left alone.
func TestRunOut(t *testing.T) {
	s := State{Rows: []Row{
		{Event: "e1", Status: InProgress, Gen: 1, LeaseLive: true, Aged: true},
		{Event: "e2", Status: InProgress, Gen: 1, LeaseLive: true},
		{Event: "e3", Status: Ready},
		{Event: "e4", Status: InProgress, Gen: 2},
	}}
	got := s.RunOut([]string{"e1", "e2", "e3", "e4"})
	if len(got) != 4 || got[0].Key() != s.Key() {
		t.Fatalf("%d states, want s and the three ways e1 and e2 may run out: %v", len(got), got)
	}
	seen := map[[2]bool]bool{}
	for _, st := range got {
		e1, e2 := st.Rows[0], st.Rows[1]
		if e1.LeaseLive != e1.Aged {
			t.Errorf("e1 is live but no longer aged, or ran out still aged: %+v", e1)
		}
		seen[[2]bool{e1.LeaseLive, e2.LeaseLive}] = true
		if st.Rows[2] != s.Rows[2] || st.Rows[3] != s.Rows[3] {
			t.Errorf("a row without a live lease changed: %+v", st.Rows)
		}
	}
	if len(seen) != 4 {
		t.Errorf("the combinations of e1 and e2 run out: %v, want all four", seen)
	}
	if got := s.RunOut(nil); len(got) != 1 {
		t.Errorf("no event named: %d states, want s alone", len(got))
	}
	s.Policy.SessionLease = true
	if got := s.RunOut([]string{"e1", "e2"}); len(got) != 1 {
		t.Errorf("a session lease ran out by the clock: %d states", len(got))
	}
}
