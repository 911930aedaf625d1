package model

import (
	"slices"
	"testing"
)

// What a profile's relaxing lets a session lease do: each is the effect a
// library with a by-id outcome really has (que, testdata/libraries/que.sql),
// allowed only once its property is relaxed.

// relaxedSession is sessionState with relax relaxed.
func relaxedSession(relax Property) State {
	return NewWith(Policy{Order: FIFO, SessionLease: true, Relax: relax})
}

// TestStaleRetryCannotEndAnotherSessionsLock: with fencing relaxed, a stale
// retry by id on a row another worker's session holds may leave the row
// that session's (it cannot release a lock it does not hold), and the job
// then waits for its backoff once the lease ends. Strict, it is refused.
func TestStaleRetryCannotEndAnotherSessionsLock(t *testing.T) {
	program := []string{"Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1", "w1.EndSession() -> ok", "w2.Claim() -> claimed e1 gen=2"}
	strict := playFrom(t, sessionState(), program...)
	if got := outcomes(strict.Step(mustOp(t, "w1.Retry(e1, gen=1)"))); !slices.Equal(got, []string{"rejected"}) {
		t.Fatalf("strict: the stale retry may be %v, want only rejected", got)
	}
	s := playFrom(t, relaxedSession(Fencing), program...)
	var held *State
	for _, tr := range s.Step(mustOp(t, "w1.Retry(e1, gen=1)")) {
		if tr.Out.Kind == Applied && tr.Next.Rows[0].Status == InProgress {
			held = &tr.Next
		}
	}
	if held == nil {
		t.Fatal("fencing relaxed: no applied stale retry leaves e1 held by w2's session")
	}
	if r := held.Rows[0]; r.Holder != "w2" || !r.LeaseLive || !r.Rescheduled {
		t.Fatalf("after the stale retry: %+v, want w2's live lease, rescheduled", r)
	}
	ended := playFrom(t, *held, "w2.EndSession() -> ok")
	if r := ended.Rows[0]; r.Status != Ready || r.Due {
		t.Errorf("once w2's session ends: %s, want READY waiting for its backoff", rows(ended))
	}
	due := playFrom(t, *held, "MakeDue(e1) -> ok", "w2.EndSession() -> ok")
	if got := rows(due); got != "e1 INPROGRESS gen=2 expired" {
		t.Errorf("made due, then w2's session ended: %s, want an expired claim", got)
	}
}

// TestRetryOfASentRowMayLeaveItSent: with terminal relaxed, a retry that
// applies to a SENT row may leave it SENT (que's set_error on a finished
// job only reschedules it); strict, it is refused.
func TestRetryOfASentRowMayLeaveItSent(t *testing.T) {
	program := []string{"Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1", "w1.Complete(e1, gen=1) -> applied"}
	strict := playFrom(t, sessionState(), program...)
	if got := outcomes(strict.Step(mustOp(t, "w1.Retry(e1, gen=1)"))); !slices.Equal(got, []string{"rejected"}) {
		t.Fatalf("strict: the retry may be %v, want only rejected", got)
	}
	s := playFrom(t, relaxedSession(Terminal), program...)
	if !slices.ContainsFunc(s.Step(mustOp(t, "w1.Retry(e1, gen=1)")), func(tr Transition) bool {
		return tr.Out.Kind == Applied && tr.Next.Rows[0].Status == Sent
	}) {
		t.Error("terminal relaxed: no applied retry leaves e1 SENT")
	}
}

// TestOutlivedLeaseReadsAsHeldOnlyWhenRelaxed: a lease still held after
// its session ended ("a session lease outlived its session") matches the
// model only once no_stranded_row is relaxed.
func TestOutlivedLeaseReadsAsHeldOnlyWhenRelaxed(t *testing.T) {
	held := []RowView{{Event: "e1", Status: InProgress, LeaseHeld: true, Gen: 1, HasGen: true}}
	program := []string{"Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1", "w1.EndSession() -> ok"}
	if got := Match([]State{playFrom(t, sessionState(), program...)}, held, true); len(got) != 0 {
		t.Error("strict: an outlived lease matched the model")
	}
	if got := Match([]State{playFrom(t, relaxedSession(NoStrandedRow), program...)}, held, true); len(got) != 1 {
		t.Error("no_stranded_row relaxed: an outlived lease did not match the model")
	}
	// An owner's retry that applied, its unlock run on another server
	// connection: the model has the row READY, the lock is still held.
	retried := []string{"Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1", "w1.Retry(e1, gen=1) -> applied"}
	if got := Match([]State{playFrom(t, sessionState(), retried...)}, held, true); len(got) != 0 {
		t.Error("strict: a lock left after an applied retry matched the model")
	}
	if got := Match([]State{playFrom(t, relaxedSession(NoStrandedRow), retried...)}, held, true); len(got) != 1 {
		t.Error("no_stranded_row relaxed: a lock left after an applied retry did not match the model")
	}
}

// TestLockGoneWhileItsSessionLives: a session lease whose lock is gone
// while the session that took it lives (a transaction pooler's server
// connection ended by another client's trouble, or the protocol's own
// unlock) is named, not a bare "persisted rows differ".
func TestLockGoneWhileItsSessionLives(t *testing.T) {
	s := playFrom(t, sessionState(), "Enqueue(e1) -> ok", "Enqueue(e2) -> ok",
		"w1.Claim() -> claimed e1 gen=1", "w2.Claim() -> claimed e2 gen=1")
	read := []RowView{
		{Event: "e1", Status: Ready, Due: true, Gen: 1, HasGen: true},
		{Event: "e2", Status: InProgress, LeaseHeld: true, Gen: 1, HasGen: true},
	}
	if got := Match([]State{s}, read, true); len(got) != 0 {
		t.Fatal("a lock gone while its session lives matched the model")
	}
	rule, detail := ExplainRows(mustOp(t, "w2.EndSession()"), s, read)
	if rule != "a session lease ended while its session lived" || PropertyOf(rule, detail) != OneLiveOwner {
		t.Errorf("rule %q (%v), want the session lease that ended while its session lived (one_live_owner)", rule, PropertyOf(rule, detail))
	}
}
