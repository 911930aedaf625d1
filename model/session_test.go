package model

import (
	"slices"
	"testing"
)

// Session leases: the lease ends with the holder's session, and only then.

func sessionState() State { return NewWith(Policy{Order: FIFO, SessionLease: true}) }

// TestSessionEndsTheLease: after w1's session ends (a kill, EndSession, a
// restart) its row is claimable; w1's outcome is then a stale owner's,
// refused, and w2's claim takes the row. Without lease=session the same
// kill leaves the lease live.
func TestSessionEndsTheLease(t *testing.T) {
	for _, end := range []string{"w1.Kill() -> ok", "w1.EndSession() -> ok", "Restart() -> ok"} {
		s := playFrom(t, sessionState(), "Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1", end)
		if got := rows(s); got != "e1 INPROGRESS gen=1 expired" {
			t.Errorf("after %s: %s, want e1's lease expired", end, got)
		}
		if got := outcomes(s.Step(mustOp(t, "w1.Complete(e1, gen=1)"))); !slices.Equal(got, []string{"rejected"}) {
			t.Errorf("after %s the stale owner's complete may be %v, want only rejected", end, got)
		}
		s = playFrom(t, s, "w2.Claim() -> claimed e1 gen=2")
		if r := s.Rows[0]; r.Holder != "w2" || !r.LeaseLive {
			t.Errorf("after w2's claim: %+v, want held by w2's session", r)
		}
	}
	s := playFrom(t, New(FIFO), "Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1", "w1.Kill() -> ok")
	if got := rows(s); got != "e1 INPROGRESS gen=1 live" {
		t.Errorf("a stored lease after a kill: %s, want live", got)
	}
}

// TestOtherSessionsKeepTheirLeases: ending w1's session leaves w2's lease.
func TestOtherSessionsKeepTheirLeases(t *testing.T) {
	s := playFrom(t, sessionState(), "Enqueue(e1) -> ok", "Enqueue(e2) -> ok",
		"w1.Claim() -> claimed e1 gen=1", "w2.Claim() -> claimed e2 gen=1", "w1.EndSession() -> ok")
	if got := rows(s); got != "e1 INPROGRESS gen=1 expired, e2 INPROGRESS gen=1 live" {
		t.Errorf("rows: %s", got)
	}
	if got := outcomes(s.Step(mustOp(t, "w3.Claim()"))); !slices.Equal(got, []string{"claimed e1 gen=2"}) {
		t.Errorf("w3's claim may be %v, want e1 only (e2 is w2's)", got)
	}
}

// TestUnknownOutcomeEndsTheSession: a claim whose connection a fault cut
// may have taken the row, but the session that would hold it is gone.
func TestUnknownOutcomeEndsTheSession(t *testing.T) {
	s := playFrom(t, sessionState(), "Enqueue(e1) -> ok")
	for _, next := range s.AmbiguousEnding(mustOp(t, "w1.Claim()")) {
		if r := next.Rows[0]; r.LeaseLive || r.Holder != "" {
			t.Errorf("after a lost claim: %+v, want no live lease", r)
		}
	}
	plain := playFrom(t, New(FIFO), "Enqueue(e1) -> ok").AmbiguousEnding(mustOp(t, "w1.Claim()"))
	if !slices.ContainsFunc(plain, func(s State) bool { return s.Rows[0].LeaseLive }) {
		t.Errorf("a stored lease's lost claim: %d states, none with the lease live", len(plain))
	}
}

// TestEndedSessionReadsAsReady: a row whose session lease ended may be read
// as READY and due (que keeps no status for a claim), only under
// lease=session and only once the lease is gone.
func TestEndedSessionReadsAsReady(t *testing.T) {
	ready := []RowView{{Event: "e1", Status: Ready, Due: true}}
	s := playFrom(t, sessionState(), "Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1")
	if got := Match([]State{s}, ready, false); len(got) != 0 {
		t.Errorf("a live session lease matched a READY read")
	}
	ended := playFrom(t, s, "w1.EndSession() -> ok")
	if got := Match([]State{ended}, ready, false); len(got) != 1 {
		t.Errorf("an ended session lease did not match a READY read")
	}
	stored := playFrom(t, New(FIFO), "Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1", "Expire(e1) -> ok")
	if got := Match([]State{stored}, ready, false); len(got) != 0 {
		t.Errorf("an expired stored lease matched a READY read")
	}
}
