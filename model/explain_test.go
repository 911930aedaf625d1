package model

import (
	"slices"
	"testing"
)

func TestExplain(t *testing.T) {
	two := []string{"Enqueue(e1) -> ok", "Enqueue(e2) -> ok"}
	claimed := []string{"Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1"}
	expired := append(slices.Clone(claimed), "Expire(e1) -> ok")
	reclaimed := append(slices.Clone(expired), "w2.Claim() -> claimed e1 gen=2")
	tests := []struct {
		given []string
		step  string
		want  string
	}{
		{reclaimed, "w1.Complete(e1, gen=1) -> applied",
			"w1.Complete(e1, gen=1) -> applied: stale owner's complete applied (e1 gen 1 is not the current live claim: e1 is at gen 2)"},
		{reclaimed, "w1.Retry(e1, gen=1) -> applied",
			"w1.Retry(e1, gen=1) -> applied: stale owner's retry applied (e1 gen 1 is not the current live claim: e1 is at gen 2)"},
		{expired, "w1.Renew(e1, gen=1) -> applied",
			"w1.Renew(e1, gen=1) -> applied: stale owner's renew applied (e1 gen 1 is not the current live claim: its lease expired)"},
		{append(slices.Clone(claimed), "w1.Retry(e1, gen=1) -> applied"), "w1.Complete(e1, gen=1) -> applied",
			"w1.Complete(e1, gen=1) -> applied: stale owner's complete applied (e1 gen 1 is not the current live claim: e1 is READY)"},
		{append(slices.Clone(claimed), "w1.Complete(e1, gen=1) -> applied"), "w1.Retry(e1, gen=1) -> applied",
			"w1.Retry(e1, gen=1) -> applied: retry applied to a SENT row"},
		{nil, "w1.Complete(e9, gen=1) -> applied",
			"w1.Complete(e9, gen=1) -> applied: complete applied to e9, which was never enqueued"},
		{claimed, "w1.Complete(e1, gen=1) -> rejected",
			"w1.Complete(e1, gen=1) -> rejected: current owner's complete rejected"},
		{claimed, "w1.Renew(e1, gen=1) -> rejected",
			"w1.Renew(e1, gen=1) -> rejected: current owner's renew rejected"},
		{claimed, "w1.Complete(e1, gen=1) -> empty",
			"w1.Complete(e1, gen=1) -> empty: want applied"},
		{expired, "w2.Claim() -> empty",
			"w2.Claim() -> empty: claim returned nothing while e1 is claimable (stranded row)"},
		{append(slices.Clone(two), "w1.Claim() -> claimed e1 gen=1"), "w2.Claim() -> claimed e1 gen=2",
			"w2.Claim() -> claimed e1 gen=2: claim took e1 whose lease is live (two live owners)"},
		{two, "w1.Claim() -> claimed e2 gen=1",
			"w1.Claim() -> claimed e2 gen=1: claim took e2 out of order: e1 is claimable first"},
		{two, "w1.Begin() -> claimed e2 gen=1",
			"w1.Begin() -> claimed e2 gen=1: claim took e2 out of order: e1 is claimable first"},
		{expired, "w2.Claim() -> claimed e1 gen=3",
			"w2.Claim() -> claimed e1 gen=3: claim returned generation 3, want 2 (generation must rise by one)"},
		{append(slices.Clone(two), "w1.Begin() -> claimed e1 gen=1"), "w2.Claim() -> claimed e1 gen=1",
			"w2.Claim() -> claimed e1 gen=1: claim took e1, a row locked by another transaction"},
		{append(slices.Clone(claimed), "w1.Retry(e1, gen=1) -> applied"), "w2.Claim() -> claimed e1 gen=2",
			"w2.Claim() -> claimed e1 gen=2: claim took e1 which is waiting for its backoff"},
		{append(slices.Clone(claimed), "w1.Complete(e1, gen=1) -> applied"), "w2.Claim() -> claimed e1 gen=2",
			"w2.Claim() -> claimed e1 gen=2: claim took e1, a SENT row (SENT is terminal)"},
		{nil, "w1.Claim() -> claimed e9 gen=1",
			"w1.Claim() -> claimed e9 gen=1: claim returned e9, which was never enqueued"},
		{nil, "Enqueue(e1) -> rejected",
			"Enqueue(e1) -> rejected: want ok"},
		{nil, "w1.Commit() -> ok",
			"w1.Commit() -> ok: the model cannot run this step: w1 has no open claim transaction"},
	}
	for _, tc := range tests {
		s := play(t, FIFO, tc.given...)
		op, got, err := ParseStep(tc.step)
		if err != nil {
			t.Fatal(err)
		}
		if msg := errText(Explain(s, op, got, s.Step(op))); msg != tc.want {
			t.Errorf("Explain(%s):\n got %q\nwant %q", tc.step, msg, tc.want)
		}
	}
}

func TestExplainAllowedOutcome(t *testing.T) {
	s := play(t, Any, "Enqueue(e1) -> ok", "Enqueue(e2) -> ok")
	op := mustOp(t, "w1.Claim()")
	if err := Explain(s, op, Outcome{Kind: Claimed, Event: "e2", Gen: 1}, s.Step(op)); err != nil {
		t.Fatalf("an allowed outcome was explained: %v", err)
	}
}

// TestExplainClaimOfARowAnOpenClaimBuries: a row an open claim transaction
// locks only to bury it is exhausted, and a claim that takes it is past its
// budget, the mutant attempts_by_retry_only's rule; a row an open claim
// took is locked.
func TestExplainClaimOfARowAnOpenClaimBuries(t *testing.T) {
	s := New(FIFO)
	s.Policy.MaxAttempts = 1
	s = playFrom(t, s, "Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1", "Expire(e1) -> ok", "w2.Begin() -> empty")
	if s.Rows[0].LockedBy != "w2" || !s.buryingOpen("e1") {
		t.Fatalf("w2's open claim does not bury e1: %+v, %+v", s.Rows[0], s.Pending)
	}
	op, got, err := ParseStep("w1.Claim() -> claimed e1 gen=2")
	if err != nil {
		t.Fatal(err)
	}
	want := "w1.Claim() -> claimed e1 gen=2: claim took e1 past its attempt budget (it was claimed 1 times; max_attempts=1)"
	if msg := errText(Explain(s, op, got, s.Step(op))); msg != want {
		t.Errorf("got %q\nwant %q", msg, want)
	}
}

// TestExplainExpiringReclaimThatFindsNothing: a Begin(expire e1) whose claim
// comes back empty is explained from the row it expired, which it had to
// take: a stranded row, not a bare "want".
func TestExplainExpiringReclaimThatFindsNothing(t *testing.T) {
	s := play(t, FIFO, "Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1")
	op := mustOp(t, "w2.Begin(expire e1)")
	got := Outcome{Kind: Empty}
	want := "claim returned nothing while e1 is claimable (stranded row)"
	if why := explain(s, op, got, s.Step(op)); why != want {
		t.Errorf("explain = %q, want %q", why, want)
	}
}
