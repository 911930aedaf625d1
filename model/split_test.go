package model

import "testing"

// TestPartFormatAndParse: a split step's part prints as [K/N] after the op
// and parses back; a malformed part or a part of a kind that cannot be
// split is refused.
func TestPartFormatAndParse(t *testing.T) {
	op := Op{Kind: Complete, Worker: "w1", Event: "e1", Gen: 1, Part: Part{Upto: 1, Of: 2}}
	line := FormatStep(op, Outcome{Kind: OK})
	if line != "w1.Complete(e1, gen=1) [1/2] -> ok" {
		t.Fatalf("FormatStep = %q", line)
	}
	got, _, err := ParseStep(line)
	if err != nil || got != op {
		t.Fatalf("ParseStep(%q) = %+v, %v; want %+v", line, got, err, op)
	}
	for _, bad := range []string{"w1.Complete(e1, gen=1) [0/2]", "w1.Complete(e1, gen=1) [3/2]", "w1.Complete(e1, gen=1) [1/1]", "w1.Claim() [1/2]", "Expire(e1) [1/2]"} {
		if op, err := ParseOp(bad); err == nil {
			t.Errorf("ParseOp(%q) = %+v, want an error", bad, op)
		}
	}
}

// TestSplitJudgedAtItsEnd: the first part changes nothing; the last is the
// whole step from the state when it commits, so a check-then-act whose
// claim was reclaimed in between may only be rejected, and the rows the
// first part held are released.
func TestSplitJudgedAtItsEnd(t *testing.T) {
	s := NewWith(Policy{Order: FIFO})
	s = mustStep(t, s, Op{Kind: Enqueue, Event: "e1"}, OK)
	s = mustStep(t, s, Op{Kind: ClaimOp, Worker: "w1"}, Claimed)
	first := Op{Kind: Complete, Worker: "w1", Event: "e1", Gen: 1, Part: Part{Upto: 1, Of: 2}}
	last := first
	last.Part.Upto = 2

	held := mustStep(t, s, first, OK).Hold("w1", []string{"e1"})
	if held.Rows[0].LockedBy != "w1" || held.Rows[0].Status != InProgress {
		t.Fatalf("after the first part, holding e1: %+v", held.Rows[0])
	}
	if tr := held.Step(Op{Kind: ClaimOp, Worker: "w2"}); len(tr) != 1 || tr[0].Out.Kind != Empty {
		t.Errorf("a claim while the split holds e1 %v, want empty (SKIP LOCKED)", tr)
	}
	done := mustStep(t, held, last, Applied)
	if done.Rows[0].Status != Sent || done.Rows[0].LockedBy != "" {
		t.Errorf("after the last part: %+v, want SENT and unlocked", done.Rows[0])
	}

	// Not held: the lease runs out and w2 reclaims in between.
	free := mustStep(t, s, first, OK)
	free = mustStep(t, free, Op{Kind: Expire, Event: "e1"}, OK)
	free = mustStep(t, free, Op{Kind: ClaimOp, Worker: "w2"}, Claimed)
	for _, tr := range free.Step(last) {
		if tr.Out.Kind == Applied {
			t.Errorf("the stale last part may apply: %v", tr)
		}
	}
}

func mustStep(t *testing.T, s State, op Op, want OutcomeKind) State {
	t.Helper()
	for _, tr := range s.Step(op) {
		if tr.Out.Kind == want {
			return tr.Next
		}
	}
	t.Fatalf("%v: no transition with outcome %s from %s", op, want, s.Key())
	return s
}
