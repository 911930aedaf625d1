package model

import "testing"

func TestOpString(t *testing.T) {
	tests := []struct {
		op   Op
		want string
	}{
		{Op{Kind: ClaimOp, Worker: "w2"}, "w2.Claim()"},
		{Op{Kind: Begin, Worker: "w2"}, "w2.Begin()"},
		{Op{Kind: Commit, Worker: "w2"}, "w2.Commit()"},
		{Op{Kind: Rollback, Worker: "w2"}, "w2.Rollback()"},
		{Op{Kind: Complete, Worker: "w2", Event: "e1", Gen: 1}, "w2.Complete(e1, gen=1)"},
		{Op{Kind: Retry, Worker: "w2", Event: "e1", Gen: 1}, "w2.Retry(e1, gen=1)"},
		{Op{Kind: Renew, Worker: "w2", Event: "e1", Gen: 1}, "w2.Renew(e1, gen=1)"},
		{Op{Kind: Enqueue, Event: "e1"}, "Enqueue(e1)"},
		{Op{Kind: Expire, Event: "e1"}, "Expire(e1)"},
		{Op{Kind: MakeDue, Event: "e1"}, "MakeDue(e1)"},
		{Op{Kind: Pause, Worker: "w2"}, "w2.Pause()"},
		{Op{Kind: Resume, Worker: "w2"}, "w2.Resume()"},
		{Op{Kind: Kill, Worker: "w2"}, "w2.Kill()"},
		{Op{Kind: Respawn, Worker: "w2"}, "w2.Respawn()"},
		{Op{Kind: Restart}, "Restart()"},
	}
	for _, tc := range tests {
		if got := tc.op.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.op, got, tc.want)
		}
		got, err := ParseOp(tc.want)
		if err != nil || got != tc.op {
			t.Errorf("ParseOp(%q) = %#v, %v; want %#v", tc.want, got, err, tc.op)
		}
	}
}

func TestOutcomeString(t *testing.T) {
	tests := []struct {
		out  Outcome
		want string
	}{
		{Outcome{Kind: OK}, "ok"},
		{Outcome{Kind: Claimed, Event: "e1", Gen: 1}, "claimed e1 gen=1"},
		{Outcome{Kind: Empty}, "empty"},
		{Outcome{Kind: Applied}, "applied"},
		{Outcome{Kind: Rejected}, "rejected"},
		{Outcome{Kind: Unknown}, "unknown"},
	}
	for _, tc := range tests {
		if got := tc.out.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.out, got, tc.want)
		}
		got, err := ParseOutcome(tc.want)
		if err != nil || !got.Equal(tc.out) {
			t.Errorf("ParseOutcome(%q) = %#v, %v; want %#v", tc.want, got, err, tc.out)
		}
	}
}

func TestStepRoundTrip(t *testing.T) {
	for _, line := range []string{
		"w2.Complete(e1, gen=1) -> rejected",
		"w1.Claim() -> claimed e12 gen=40",
		// A token protocol's line: the token's first characters.
		"w1.Claim() -> claimed e1 token=3f2a9c1e, e2 token=77aa01b2",
		"w1.Retry(e2, token=77aa01b2) -> applied",
		// A protocol without a fence: no count the protocol never gave,
		// the worker's second claim of e1.
		"w1.Claim() -> claimed e1",
		"w1.Complete(e1, claim=2) -> rejected",
		"w3.Begin() -> empty",
		"Enqueue(e1) -> ok",
		"w1.Commit() -> unknown",
		"Restart() -> ok",
	} {
		op, out, err := ParseStep(line)
		if err != nil {
			t.Errorf("ParseStep(%q): %v", line, err)
			continue
		}
		if got := FormatStep(op, out); got != line {
			t.Errorf("FormatStep(ParseStep(%q)) = %q", line, got)
		}
	}
}

func TestParseStepRejects(t *testing.T) {
	for _, line := range []string{
		"",
		"w1.Claim()",
		"w1.Claim() -> maybe",
		"w1.Claim() -> claimed e1 gen=x",
		"w1.Claim() -> claimed e1 gen=1, e2",
		"w1.Claim() -> claimed e1 token=",
		"w1.Complete(e1, claim=0) -> applied",
		"w1.Complete(e1, color=red) -> applied",
		"w1.Fly() -> ok",
		"Claim() -> ok",
		"w1.Claim(e1) -> ok",
		"Enqueue() -> ok",
		"w1.Enqueue(e1) -> ok",
		"w1.Complete(e1) -> applied",
		"w1.Complete(e1, gen=one) -> applied",
		"w1.Complete(e1,gen=1) -> applied",
		"w1.Claim( -> ok",
	} {
		if op, out, err := ParseStep(line); err == nil {
			t.Errorf("ParseStep(%q) = %v, %v; want an error", line, op, out)
		}
	}
}

// TestBeginExpiringRoundTrips: Begin(expire e) prints and parses back.
func TestBeginExpiringRoundTrips(t *testing.T) {
	op := Op{Kind: Begin, Worker: "w2", Event: "e1"}
	if got := op.String(); got != "w2.Begin(expire e1)" {
		t.Fatalf("String = %q", got)
	}
	back, err := ParseOp("w2.Begin(expire e1)")
	if err != nil || back != op {
		t.Fatalf("ParseOp = %+v, %v", back, err)
	}
	if _, err := ParseOp("w2.Begin(e1)"); err == nil {
		t.Error("w2.Begin(e1) parses")
	}
}
