package model

import (
	"slices"
	"testing"
)

// TestSplitClaimRoundTrips: a claim's part prints as [K/N] and parses back.
func TestSplitClaimRoundTrips(t *testing.T) {
	op := Op{Kind: ClaimOp, Worker: "w1", Part: Part{Upto: 1, Of: 2}}
	line := FormatStep(op, Outcome{Kind: OK})
	if line != "w1.Claim() [1/2] -> ok" {
		t.Fatalf("FormatStep = %q", line)
	}
	if got, _, err := ParseStep(line); err != nil || got != op {
		t.Fatalf("ParseStep(%q) = %+v, %v; want %+v", line, got, err, op)
	}
}

// TestSplitClaimTakingARowClaimedInBetween: a claim whose first part read
// e1 and whose last part takes it after w2 claimed it is refused (e1 is
// w2's); the same last part may come back empty, or with e2 when e2 is
// still there to take, and a split nobody came between takes e1 at once.
func TestSplitClaimTakingARowClaimedInBetween(t *testing.T) {
	first := Op{Kind: ClaimOp, Worker: "w1", Part: Part{Upto: 1, Of: 2}}
	last := first
	last.Part.Upto = 2

	one := play(t, FIFO, "Enqueue(e1) -> ok")
	read := mustStep(t, one, first, OK)
	if read.Rows[0].ReadBy != "w1" {
		t.Fatalf("after the first part: %+v, want e1 read by w1", read.Rows[0])
	}
	if got := outcomes(read.Step(last)); !slices.Equal(got, []string{"claimed e1 gen=1"}) {
		t.Errorf("nobody came between: the last part may give %v, want only e1", got)
	}
	stolen := mustStep(t, read, Op{Kind: ClaimOp, Worker: "w2"}, Claimed)
	got := outcomes(stolen.Step(last))
	if slices.Contains(got, "claimed e1 gen=2") || !slices.Contains(got, "empty") {
		t.Errorf("e1 claimed by w2 in between: the last part may give %v, want empty and never e1 again", got)
	}

	two := play(t, FIFO, "Enqueue(e1) -> ok", "Enqueue(e2) -> ok")
	stolen = mustStep(t, mustStep(t, two, first, OK), Op{Kind: ClaimOp, Worker: "w2"}, Claimed)
	got = outcomes(stolen.Step(last))
	if !slices.Contains(got, "claimed e2 gen=1") || !slices.Contains(got, "empty") || slices.Contains(got, "claimed e1 gen=2") {
		t.Errorf("e1 claimed by w2 in between, e2 free: the last part may give %v", got)
	}
	for _, tr := range stolen.Step(last) {
		for _, r := range tr.Next.Rows {
			if r.ReadBy != "" || r.LockedBy != "" {
				t.Errorf("after the last part (%v): %+v still marked", tr.Out, r)
			}
		}
	}
}

// TestSplitClaimHoldsWhatItLocked: a first part that locked e1 (SKIP
// LOCKED in its read) keeps w2's claim off it, and its last part takes e1.
func TestSplitClaimHoldsWhatItLocked(t *testing.T) {
	first := Op{Kind: ClaimOp, Worker: "w1", Part: Part{Upto: 1, Of: 2}}
	last := first
	last.Part.Upto = 2
	s := play(t, FIFO, "Enqueue(e1) -> ok", "Enqueue(e2) -> ok")
	held := mustStep(t, s, first, OK).Hold("w1", []string{"e1"})
	held = playFrom(t, held, "w2.Claim() -> claimed e2 gen=1")
	if got := outcomes(held.Step(last)); !slices.Equal(got, []string{"claimed e1 gen=1"}) {
		t.Errorf("e1 held by the split: the last part may give %v, want only e1", got)
	}
}

// TestSplitClaimBuriesWhatItsReadFound: with max_attempts, a claim that
// buries in its first statement does not see a last attempt that ran out
// after it: at commit it may bury only what was spent at its read.
func TestSplitClaimBuriesWhatItsReadFound(t *testing.T) {
	first := Op{Kind: ClaimOp, Worker: "w1", Part: Part{Upto: 1, Of: 2}}
	last := first
	last.Part.Upto = 2
	s := NewWith(Policy{Order: FIFO, MaxAttempts: 1})
	s = playFrom(t, s, "Enqueue(e1) -> ok", "Enqueue(e2) -> ok", "w2.Claim() -> claimed e1 gen=1", "w3.Claim() -> claimed e2 gen=1", "Expire(e1) -> ok")
	read := mustStep(t, s, first, OK).Hold("w1", []string{"e1"})
	read = playFrom(t, read, "Expire(e2) -> ok")
	var dead [][]string
	for _, tr := range read.Step(last) {
		var d []string
		for _, r := range tr.Next.Rows {
			if r.Status == Dead {
				d = append(d, r.Event)
			}
		}
		dead = append(dead, d)
	}
	if !slices.ContainsFunc(dead, func(d []string) bool { return slices.Equal(d, []string{"e1"}) }) ||
		!slices.ContainsFunc(dead, func(d []string) bool { return slices.Equal(d, []string{"e1", "e2"}) }) {
		t.Errorf("the last part may bury %v, want [e1] (its read's) and [e1 e2] (at commit)", dead)
	}
}

// TestSplitClaimPassedByAHeldRow: a read with SKIP LOCKED passes by a row
// another open claim transaction holds; when that transaction rolls back
// before the last part, the claim may come back empty.
func TestSplitClaimPassedByAHeldRow(t *testing.T) {
	first := Op{Kind: ClaimOp, Worker: "w1", Part: Part{Upto: 1, Of: 2}}
	last := first
	last.Part.Upto = 2
	s := play(t, FIFO, "Enqueue(e1) -> ok", "w2.Begin() -> claimed e1 gen=1")
	s = playFrom(t, mustStep(t, s, first, OK), "w2.Rollback() -> ok")
	if got := outcomes(s.Step(last)); !slices.Contains(got, "empty") || !slices.Contains(got, "claimed e1 gen=1") {
		t.Errorf("e1 held at the read, free at commit: the last part may give %v, want empty and e1", got)
	}
}
