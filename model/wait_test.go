package model

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// A stale owner's complete sent while a reclaim holds its row in an open
// transaction: the model lets it run (Precondition), names the holder
// (WaitsOn), allows only rejected if it answers at once (it cannot have
// touched the locked row), and judges it after the wait from the state
// the holder's end leaves: rejected after the reclaim commits, under both
// policies; under the lenient policy after a rollback, applied or
// rejected (the expired claim is current again, and nobody has taken it).
func TestWaitingSteps(t *testing.T) {
	reclaimOpen := []string{
		"Enqueue(e1) -> ok",
		"w2.Claim() -> claimed e1 gen=1",
		"Expire(e1) -> ok",
		"w1.Begin() -> claimed e1 gen=2",
	}
	stale := mustOp(t, "w2.Complete(e1, gen=1)")
	for _, lenient := range []bool{false, true} {
		s := playFrom(t, NewWith(Policy{Order: FIFO, Lenient: lenient}), reclaimOpen...)
		if err := s.Precondition(stale); err != nil {
			t.Fatalf("lenient=%v: Precondition(%s) = %v, want nil: a waiting step may run", lenient, stale, err)
		}
		if got := s.WaitsOn(stale); got != "w1" {
			t.Errorf("lenient=%v: WaitsOn(%s) = %q, want w1", lenient, stale, got)
		}
		if got := outcomes(s.Step(stale)); !slices.Equal(got, []string{"rejected"}) {
			t.Errorf("lenient=%v: %s answering at once may be %q, want only rejected", lenient, stale, got)
		}
		committed := playFrom(t, s, "w1.Commit() -> ok")
		if got := committed.WaitsOn(stale); got != "" {
			t.Errorf("lenient=%v: after the commit WaitsOn = %q, want none", lenient, got)
		}
		if got := outcomes(committed.Step(stale)); !slices.Equal(got, []string{"rejected"}) {
			t.Errorf("lenient=%v: after the reclaim commits %s may be %q, want only rejected", lenient, stale, got)
		}
		rolledBack := playFrom(t, s, "w1.Rollback() -> ok")
		want := []string{"rejected"}
		if lenient {
			want = []string{"applied", "rejected"}
		}
		got := outcomes(rolledBack.Step(stale))
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("lenient=%v: after the reclaim rolls back %s may be %q, want %q", lenient, stale, got, want)
		}
	}
	// Fixtures run on the harness's own connection: one behind a lock is
	// still refused, and no outcome step of a worker without a claim waits.
	s := playFrom(t, New(FIFO), reclaimOpen...)
	if s.Precondition(mustOp(t, "Expire(e1)")) == nil {
		t.Error("Expire behind an open claim transaction: Precondition = nil, want refused")
	}
	if got := s.WaitsOn(mustOp(t, "Expire(e1)")); got != "" {
		t.Errorf("WaitsOn(Expire(e1)) = %q, want none: fixtures never wait", got)
	}
}

func TestWaitingOutcomeRoundTrip(t *testing.T) {
	out := Outcome{Kind: Waiting, On: "w2"}
	line := FormatStep(mustOp(t, "w1.Complete(e1, gen=1)"), out)
	if line != "w1.Complete(e1, gen=1) -> waiting on w2" {
		t.Fatalf("FormatStep = %q", line)
	}
	_, back, err := ParseStep(line)
	if err != nil || !back.Equal(out) {
		t.Fatalf("ParseStep(%q) = %v, %v; want %v", line, back, err, out)
	}
}

// A rescue sent while a reclaim holds an expired row in an open
// transaction: the model lets it run, names the holder, and judges it from
// the state the holder's end leaves. After the commit it must leave the new
// claim alone; after a rollback it may return the expired row. It names no
// holder when the rescue has another row to change first (it would hold
// that row's lock while it waits, which the model does not follow), nor
// when two transactions hold expired rows.
func TestWaitingRescue(t *testing.T) {
	p := Policy{Order: FIFO, Rescue: true}
	reclaimOpen := []string{
		"Enqueue(e1) -> ok",
		"w2.Claim() -> claimed e1 gen=1",
		"Expire(e1) -> ok",
		"w1.Begin() -> claimed e1 gen=2",
	}
	rescue := mustOp(t, "Rescue()")
	s := playFrom(t, NewWith(p), reclaimOpen...)
	if err := s.Precondition(rescue); err != nil {
		t.Fatalf("Precondition(Rescue) = %v, want nil: a waiting rescue may run", err)
	}
	if got := s.WaitsOn(rescue); got != "w1" {
		t.Errorf("WaitsOn(Rescue) = %q, want w1", got)
	}
	committed := playFrom(t, s, "w1.Commit() -> ok")
	if got := committed.WaitsOn(rescue); got != "" {
		t.Errorf("after the commit WaitsOn(Rescue) = %q, want none", got)
	}
	for _, tr := range committed.Step(rescue) {
		if got := rows(tr.Next); got != "e1 INPROGRESS gen=2 live" {
			t.Errorf("after the reclaim commits a rescue may leave %s, want the new claim untouched", got)
		}
	}
	var after []string
	for _, tr := range playFrom(t, s, "w1.Rollback() -> ok").Step(rescue) {
		after = append(after, rows(tr.Next))
	}
	slices.Sort(after)
	want := []string{"e1 INPROGRESS gen=1 expired", "e1 READY gen=1 due", "e1 READY gen=1 waiting"}
	if !slices.Equal(after, want) {
		t.Errorf("after the reclaim rolls back a rescue may leave %q, want %q", after, want)
	}

	other := playFrom(t, NewWith(p), append(reclaimOpen, "Enqueue(e2) -> ok", "w2.Claim() -> claimed e2 gen=1", "Expire(e2) -> ok")...)
	if got := other.WaitsOn(rescue); got != "" {
		t.Errorf("with e2 expired and unlocked WaitsOn(Rescue) = %q, want none", got)
	}
	two := playFrom(t, other, "w3.Begin() -> claimed e2 gen=2")
	if got := two.WaitsOn(rescue); got != "" {
		t.Errorf("with two reclaims open WaitsOn(Rescue) = %q, want none", got)
	}
	if !two.Blocks(rescue) {
		t.Error("Blocks(Rescue) = false with two reclaims open")
	}
}

// TestFixturesMeetLocksOnlyWhenRelaxed: why the machine need not let a
// fixture wait. A fixture applies to a live lease (expire, age) or a row
// waiting on its backoff (due); an open claim transaction holds only rows
// a claim may take, expired or due ones, so a fixture meets its lock only
// in a profile whose relaxed properties let a claim take a live lease or a
// row that is not due. There the machine skips the fixture for that row.
func TestFixturesMeetLocksOnlyWhenRelaxed(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawPolicy(t)
		p.Relax = 0
		s := NewWith(p)
		for range rapid.IntRange(1, 200).Draw(t, "steps") {
			for _, r := range s.Rows {
				for _, k := range []Kind{Expire, Age, MakeDue} {
					applies := r.Status == InProgress && r.LeaseLive && k != MakeDue ||
						r.Status == Ready && !r.Due && k == MakeDue
					if op := (Op{Kind: k, Event: r.Event}); applies && s.Blocks(op) {
						t.Fatalf("%s meets %s's lock on a row it applies to (%s)", op, r.LockedBy, s.Key())
					}
				}
			}
			ts := s.Step(drawOp(t, s))
			if len(ts) > 0 {
				s = ts[rapid.IntRange(0, len(ts)-1).Draw(t, "pick")].Next
			}
		}
	})
}
