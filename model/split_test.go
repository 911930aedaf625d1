package model

import (
	"strings"
	"testing"
)

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
	for _, bad := range []string{"w1.Complete(e1, gen=1) [0/2]", "w1.Complete(e1, gen=1) [3/2]", "w1.Complete(e1, gen=1) [1/1]", "w1.Begin() [1/2]", "Expire(e1) [1/2]"} {
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

// TestSplitRescueWritesBackOverAGivenBackRow: River's rescue reads the
// stuck ids, then writes each by id. A retry that gives the row back in
// between is overwritten: the row it made READY goes DEAD (its read found
// the last attempt spent). With terminal relaxed (the profile's name for
// that race, first seen on a SENT row) the split rescue's last part may do
// that; a whole rescue pass never touches a READY row, and nor does the
// last part with nothing relaxed.
func TestSplitRescueWritesBackOverAGivenBackRow(t *testing.T) {
	state := func(relax Property) State {
		s := NewWith(Policy{Order: FIFO, MaxAttempts: 1, Rescue: true, Relax: relax})
		s.Rows = []Row{{Event: "e1", Status: Ready, Gen: 1}}
		return s
	}
	last := Op{Kind: Rescue, Part: Part{Upto: 2, Of: 2}}
	buries := func(trs []Transition) bool {
		for _, tr := range trs {
			if tr.Next.Rows[0].Status == Dead {
				return true
			}
		}
		return false
	}
	if !buries(state(Terminal).Step(last)) {
		t.Error("with terminal relaxed, a split rescue's last part may not bury the row a retry gave back")
	}
	if buries(state(0).Step(last)) {
		t.Error("with nothing relaxed, a split rescue's last part may bury a READY row")
	}
	if buries(state(Terminal).Step(Op{Kind: Rescue})) {
		t.Error("a whole rescue pass may bury a READY row")
	}
}

// TestSplitRescueLastPartBehindAReclaimIsRefused: a split rescue's last
// part while a reclaim's open transaction holds an expired row may not
// run (it would wait, and a part does not wait); Precondition says so,
// where it once panicked on the rescue's empty event.
func TestSplitRescueLastPartBehindAReclaimIsRefused(t *testing.T) {
	s := NewWith(Policy{Order: FIFO, Rescue: true})
	s.Rows = []Row{{Event: "e1", Status: InProgress, Gen: 1, LockedBy: "w2"}}
	s.Pending = []PendingClaim{{Worker: "w2", Event: "e1", Gen: 2}}
	err := s.Precondition(Op{Kind: Rescue, Part: Part{Upto: 2, Of: 2}})
	if err == nil || !strings.Contains(err.Error(), "w2") {
		t.Fatalf("Precondition = %v, want the rescue refused for w2's open transaction", err)
	}
}
