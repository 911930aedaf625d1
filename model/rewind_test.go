package model

import (
	"slices"
	"strings"
	"testing"
)

// The article's counter fence across a rewind that lost a claim: the next
// claim reissues the lost claim's generation, and the lost claim's owner
// must be refused all the same.
func TestRewindKeepsALostClaimStale(t *testing.T) {
	durable := play(t, FIFO, "Enqueue(e1) -> ok")
	claimed := playFrom(t, durable, "w1.Claim() -> claimed e1 gen=1")
	s := claimed.RewoundTo(durable)
	if got := rows(s); got != "e1 READY gen=0 due" {
		t.Fatalf("rewound rows: %s", got)
	}
	s = playFrom(t, s, "w2.Claim() -> claimed e1 gen=1")
	stale := mustOp(t, "w1.Complete(e1, gen=1)")
	if got := outcomes(s.Step(stale)); !slices.Equal(got, []string{"rejected"}) {
		t.Fatalf("the lost claim's complete: model allows %v, want only rejected", got)
	}
	err := Explain(s, stale, Outcome{Kind: Applied}, s.Step(stale))
	if err == nil || !strings.Contains(err.Error(), "stale owner's complete applied on a reissued generation") {
		t.Fatalf("explained as %v", err)
	}
	if got := outcomes(s.Step(mustOp(t, "w2.Complete(e1, gen=1)"))); !slices.Equal(got, []string{"applied"}) {
		t.Fatalf("the new owner's complete: %v", got)
	}
}

// A worker handed the same event and generation again after a rewind owns
// it again: its outcome is the current claim's.
func TestRewindReissuedToTheSameWorker(t *testing.T) {
	durable := play(t, FIFO, "Enqueue(e1) -> ok")
	s := playFrom(t, durable, "w1.Claim() -> claimed e1 gen=1").RewoundTo(durable)
	s = playFrom(t, s, "w1.Claim() -> claimed e1 gen=1")
	if got := outcomes(s.Step(mustOp(t, "w1.Complete(e1, gen=1)"))); !slices.Equal(got, []string{"applied"}) {
		t.Fatalf("w1's complete of its new claim: %v", got)
	}
}

// What no protocol can promise: a lost SENT leaves the event claimable,
// a lost claim spends no attempt, a lost enqueue is gone.
func TestRewindForgetsWhatNoProtocolCanKeep(t *testing.T) {
	p := Policy{Order: FIFO, MaxAttempts: 1}
	durable := playFrom(t, NewWith(p), "Enqueue(e1) -> ok")
	sent := playFrom(t, durable, "w1.Claim() -> claimed e1 gen=1", "w1.Complete(e1, gen=1) -> applied", "Enqueue(e2) -> ok")
	s := sent.RewoundTo(durable)
	if got := rows(s); got != "e1 READY gen=0 due" {
		t.Fatalf("rewound rows: %s", got)
	}
	// With max_attempts=1 the lost claim was the only attempt: it is not
	// counted, so e1 is claimable once more.
	s = playFrom(t, s, "w2.Claim() -> claimed e1 gen=1")
	if len(s.Lost) != 1 || s.Lost[0] != (Claim{"w1", "e1", 1, 1}) {
		t.Fatalf("lost claims: %v", s.Lost)
	}
	if err := s.Precondition(mustOp(t, "Enqueue(e2)")); err != nil {
		// e2's enqueue was lost: the machine never enqueues a name twice,
		// but the model would let it.
		t.Fatalf("e2 after its enqueue was lost: %v", err)
	}
}

// An open claim transaction dies with the server.
func TestRewindRollsBackOpenTransactions(t *testing.T) {
	durable := play(t, FIFO, "Enqueue(e1) -> ok", "w1.Begin() -> claimed e1 gen=1")
	s := durable.RewoundTo(durable)
	if len(s.Pending) != 0 || s.Rows[0].LockedBy != "" {
		t.Fatalf("after the rewind: pending %v, lock %q", s.Pending, s.Rows[0].LockedBy)
	}
}

func TestRewoundOutcomeFormat(t *testing.T) {
	for _, text := range []string{"rewound 0 acknowledged commits", "rewound 1 acknowledged commit", "rewound 2 acknowledged commits"} {
		out, err := ParseOutcome(text)
		if err != nil || out.Kind != Rewound || out.String() != text {
			t.Errorf("%q: parsed %+v, %v", text, out, err)
		}
	}
	if _, err := ParseOutcome("rewound 1 acknowledged commits"); err == nil {
		t.Error("a wrong plural parsed")
	}
	for _, text := range []string{"Crash()", "Failover()", "Stall()", "Flush()"} {
		if op, err := ParseOp(text); err != nil || op.String() != text {
			t.Errorf("%q: %v %v", text, op, err)
		}
	}
}
