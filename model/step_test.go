package model

import (
	"slices"
	"testing"
)

func TestStep(t *testing.T) {
	claimed := []string{"Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1"}
	reclaimed := append(slices.Clone(claimed), "Expire(e1) -> ok", "w2.Claim() -> claimed e1 gen=2")
	tests := []struct {
		name  string
		order Order
		given []string
		op    string
		want  []string // allowed outcomes, in order
		rows  string   // committed view after the first allowed outcome
	}{
		{"enqueue is due READY", FIFO, nil, "Enqueue(e1)", []string{"ok"}, "e1 READY gen=0 due"},
		{"claim of nothing is empty", FIFO, nil, "w1.Claim()", []string{"empty"}, ""},
		{"fifo takes the earliest", FIFO, []string{"Enqueue(e1) -> ok", "Enqueue(e2) -> ok"},
			"w1.Claim()", []string{"claimed e1 gen=1"}, "e1 INPROGRESS gen=1 live, e2 READY gen=0 due"},
		{"any takes any", Any, []string{"Enqueue(e1) -> ok", "Enqueue(e2) -> ok"},
			"w1.Claim()", []string{"claimed e1 gen=1", "claimed e2 gen=1"}, "e1 INPROGRESS gen=1 live, e2 READY gen=0 due"},
		{"live lease is not claimable", FIFO, claimed, "w2.Claim()", []string{"empty"}, "e1 INPROGRESS gen=1 live"},
		{"expired lease is claimable", FIFO, append(slices.Clone(claimed), "Expire(e1) -> ok"),
			"w2.Claim()", []string{"claimed e1 gen=2"}, "e1 INPROGRESS gen=2 live"},
		{"fifo skips a row locked by a transaction", FIFO,
			[]string{"Enqueue(e1) -> ok", "Enqueue(e2) -> ok", "w1.Begin() -> claimed e1 gen=1"},
			"w2.Claim()", []string{"claimed e2 gen=1"}, "e1 READY gen=0 due, e2 INPROGRESS gen=1 live"},
		{"any skips a row locked by a transaction", Any,
			[]string{"Enqueue(e1) -> ok", "Enqueue(e2) -> ok", "w1.Begin() -> claimed e1 gen=1"},
			"w2.Claim()", []string{"claimed e2 gen=1"}, "e1 READY gen=0 due, e2 INPROGRESS gen=1 live"},
		{"begin leaves the committed row alone", FIFO, []string{"Enqueue(e1) -> ok"},
			"w1.Begin()", []string{"claimed e1 gen=1"}, "e1 READY gen=0 due"},
		{"begin of nothing is empty", FIFO, nil, "w1.Begin()", []string{"empty"}, ""},
		{"begin skips a locked row", FIFO, []string{"Enqueue(e1) -> ok", "w1.Begin() -> claimed e1 gen=1"},
			"w2.Begin()", []string{"empty"}, "e1 READY gen=0 due"},
		{"commit applies the claim", FIFO, []string{"Enqueue(e1) -> ok", "w1.Begin() -> claimed e1 gen=1"},
			"w1.Commit()", []string{"ok"}, "e1 INPROGRESS gen=1 live"},
		{"commit of an empty claim", FIFO, []string{"Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1", "w2.Begin() -> empty"},
			"w2.Commit()", []string{"ok"}, "e1 INPROGRESS gen=1 live"},
		{"rollback frees the row", FIFO, []string{"Enqueue(e1) -> ok", "w1.Begin() -> claimed e1 gen=1", "w1.Rollback() -> ok"},
			"w2.Claim()", []string{"claimed e1 gen=1"}, "e1 INPROGRESS gen=1 live"},
		{"kill rolls the open claim back", FIFO, []string{"Enqueue(e1) -> ok", "w1.Begin() -> claimed e1 gen=1", "w1.Kill() -> ok"},
			"w2.Claim()", []string{"claimed e1 gen=1"}, "e1 INPROGRESS gen=1 live"},
		{"kill keeps a committed claim", FIFO, append(slices.Clone(claimed), "w1.Kill() -> ok"),
			"w2.Claim()", []string{"empty"}, "e1 INPROGRESS gen=1 live"},
		{"restart rolls every open claim back", FIFO,
			[]string{"Enqueue(e1) -> ok", "Enqueue(e2) -> ok", "w1.Begin() -> claimed e1 gen=1", "w2.Begin() -> claimed e2 gen=1", "Restart() -> ok"},
			"w3.Claim()", []string{"claimed e1 gen=1"}, "e1 INPROGRESS gen=1 live, e2 READY gen=0 due"},
		{"current owner completes", FIFO, claimed, "w1.Complete(e1, gen=1)", []string{"applied"}, "e1 SENT gen=1"},
		{"current owner retries", FIFO, claimed, "w1.Retry(e1, gen=1)", []string{"applied"}, "e1 READY gen=1 waiting"},
		{"current owner renews", FIFO, claimed, "w1.Renew(e1, gen=1)", []string{"applied"}, "e1 INPROGRESS gen=1 live"},
		{"expired owner's complete is rejected (strict)", FIFO, append(slices.Clone(claimed), "Expire(e1) -> ok"),
			"w1.Complete(e1, gen=1)", []string{"rejected"}, "e1 INPROGRESS gen=1 expired"},
		{"expired owner's retry is rejected (strict)", FIFO, append(slices.Clone(claimed), "Expire(e1) -> ok"),
			"w1.Retry(e1, gen=1)", []string{"rejected"}, "e1 INPROGRESS gen=1 expired"},
		{"expired owner's renew is rejected (strict)", FIFO, append(slices.Clone(claimed), "Expire(e1) -> ok"),
			"w1.Renew(e1, gen=1)", []string{"rejected"}, "e1 INPROGRESS gen=1 expired"},
		{"stale complete after reclaim", FIFO, reclaimed, "w1.Complete(e1, gen=1)", []string{"rejected"}, "e1 INPROGRESS gen=2 live"},
		{"stale retry after reclaim", FIFO, reclaimed, "w1.Retry(e1, gen=1)", []string{"rejected"}, "e1 INPROGRESS gen=2 live"},
		{"stale renew after reclaim", FIFO, reclaimed, "w1.Renew(e1, gen=1)", []string{"rejected"}, "e1 INPROGRESS gen=2 live"},
		{"new owner completes after reclaim", FIFO, reclaimed, "w2.Complete(e1, gen=2)", []string{"applied"}, "e1 SENT gen=2"},
		{"complete of an unknown event", FIFO, nil, "w1.Complete(e9, gen=1)", []string{"rejected"}, ""},
		{"renewed lease stays owned", FIFO, append(slices.Clone(claimed), "w1.Renew(e1, gen=1) -> applied"),
			"w2.Claim()", []string{"empty"}, "e1 INPROGRESS gen=1 live"},
		{"retried row waits for its backoff", FIFO, append(slices.Clone(claimed), "w1.Retry(e1, gen=1) -> applied"),
			"w2.Claim()", []string{"empty"}, "e1 READY gen=1 waiting"},
		{"retried row is claimable once due", FIFO, append(slices.Clone(claimed), "w1.Retry(e1, gen=1) -> applied", "MakeDue(e1) -> ok"),
			"w2.Claim()", []string{"claimed e1 gen=2"}, "e1 INPROGRESS gen=2 live"},
		{"SENT is not retried", FIFO, append(slices.Clone(claimed), "w1.Complete(e1, gen=1) -> applied"),
			"w1.Retry(e1, gen=1)", []string{"rejected"}, "e1 SENT gen=1"},
		{"SENT is not completed twice", FIFO, append(slices.Clone(claimed), "w1.Complete(e1, gen=1) -> applied"),
			"w1.Complete(e1, gen=1)", []string{"rejected"}, "e1 SENT gen=1"},
		{"SENT is not claimed", FIFO, append(slices.Clone(claimed), "w1.Complete(e1, gen=1) -> applied", "Expire(e1) -> ok", "MakeDue(e1) -> ok"),
			"w2.Claim()", []string{"empty"}, "e1 SENT gen=1"},
		{"expire of a READY row does nothing", FIFO, []string{"Enqueue(e1) -> ok"}, "Expire(e1)", []string{"ok"}, "e1 READY gen=0 due"},
		{"make due of an owned row does nothing", FIFO, claimed, "MakeDue(e1)", []string{"ok"}, "e1 INPROGRESS gen=1 live"},
		{"pause changes no row", FIFO, claimed, "w1.Pause()", []string{"ok"}, "e1 INPROGRESS gen=1 live"},
		{"resume changes no row", FIFO, claimed, "w1.Resume()", []string{"ok"}, "e1 INPROGRESS gen=1 live"},
		{"respawn changes no row", FIFO, claimed, "w1.Respawn()", []string{"ok"}, "e1 INPROGRESS gen=1 live"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := play(t, tc.order, tc.given...)
			ts := s.Step(mustOp(t, tc.op))
			if got := outcomes(ts); !slices.Equal(got, tc.want) {
				t.Fatalf("%s: outcomes %q, want %q", tc.op, got, tc.want)
			}
			if got := rows(ts[0].Next); got != tc.rows {
				t.Errorf("%s: rows %q, want %q", tc.op, got, tc.rows)
			}
		})
	}
}

func TestStepRecordsClaims(t *testing.T) {
	s := play(t, FIFO, "Enqueue(e1) -> ok", "Enqueue(e2) -> ok", "w1.Claim() -> claimed e1 gen=1", "w2.Begin() -> claimed e2 gen=1")
	if want := []Claim{{"w1", "e1", 1, 1}}; !slices.Equal(s.Claims, want) {
		t.Fatalf("claims after begin %v, want %v", s.Claims, want)
	}
	if want := []PendingClaim{{Worker: "w2", Event: "e2", Gen: 1}}; !slices.EqualFunc(s.Pending, want, func(a, b PendingClaim) bool { return a.Worker == b.Worker && a.Event == b.Event && a.Gen == b.Gen }) {
		t.Fatalf("pending %v, want %v", s.Pending, want)
	}
	s = playFrom(t, s, "w2.Commit() -> ok")
	if want := []Claim{{"w1", "e1", 1, 1}, {"w2", "e2", 1, 2}}; !slices.Equal(s.Claims, want) {
		t.Fatalf("claims after commit %v, want %v", s.Claims, want)
	}
	if len(s.Pending) != 0 || s.Rows[1].LockedBy != "" {
		t.Fatalf("commit left %v pending, lock %q", s.Pending, s.Rows[1].LockedBy)
	}
}

func TestPendingSortedByWorker(t *testing.T) {
	s := play(t, FIFO, "w3.Begin() -> empty", "w1.Begin() -> empty", "w2.Begin() -> empty")
	got := []string{s.Pending[0].Worker, s.Pending[1].Worker, s.Pending[2].Worker}
	if want := []string{"w1", "w2", "w3"}; !slices.Equal(got, want) {
		t.Fatalf("pending workers %q, want %q", got, want)
	}
}

func TestPreconditions(t *testing.T) {
	locked := []string{"Enqueue(e1) -> ok", "w1.Begin() -> claimed e1 gen=1"}
	tests := []struct {
		name  string
		given []string
		op    string
		want  string
	}{
		{"enqueue twice", []string{"Enqueue(e1) -> ok"}, "Enqueue(e1)", "e1 is already enqueued"},
		{"begin twice", locked, "w1.Begin()", "w1 has an open claim transaction"},
		{"claim inside a transaction", locked, "w1.Claim()", "w1 has an open claim transaction"},
		{"complete inside a transaction", locked, "w1.Complete(e1, gen=1)", "w1 has an open claim transaction"},
		{"commit without a transaction", nil, "w1.Commit()", "w1 has no open claim transaction"},
		{"rollback without a transaction", nil, "w1.Rollback()", "w1 has no open claim transaction"},
		{"expire behind a lock", locked, "Expire(e1)", "Expire(e1) waits for w1's open transaction"},
		{"make due behind a lock", locked, "MakeDue(e1)", "MakeDue(e1) waits for w1's open transaction"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := play(t, FIFO, tc.given...)
			op := mustOp(t, tc.op)
			err := s.Precondition(op)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("Precondition(%s) = %v, want %q", op, err, tc.want)
			}
			if ts := s.Step(op); ts != nil {
				t.Errorf("Step(%s) = %q, want no transitions", op, outcomes(ts))
			}
			if states := s.Ambiguous(op); states != nil {
				t.Errorf("Ambiguous(%s) = %d states, want none", op, len(states))
			}
		})
	}
	if err := New(FIFO).Precondition(Op{Kind: Complete, Event: "e1"}); err == nil {
		t.Error("Complete without a worker: no precondition error")
	}
}

func TestBlocks(t *testing.T) {
	s := play(t, FIFO, "Enqueue(e1) -> ok", "Enqueue(e2) -> ok", "w1.Begin() -> claimed e1 gen=1")
	tests := []struct {
		op   string
		want bool
	}{
		{"w2.Complete(e1, gen=1)", true},
		{"w2.Retry(e1, gen=1)", true},
		{"w2.Renew(e1, gen=1)", true},
		{"Expire(e1)", true},
		{"MakeDue(e1)", true},
		{"w1.Complete(e1, gen=1)", false}, // its own connection holds the lock
		{"w2.Claim()", false},             // SKIP LOCKED
		{"w2.Begin()", false},
		{"w2.Complete(e2, gen=1)", false},
		{"Expire(e2)", false},
		{"MakeDue(e9)", false},
		{"w2.Kill()", false},
		{"Restart()", false},
	}
	for _, tc := range tests {
		if got := s.Blocks(mustOp(t, tc.op)); got != tc.want {
			t.Errorf("Blocks(%s) = %v, want %v", tc.op, got, tc.want)
		}
	}
	// A fixture runs on the suite's connection even if the op names the lock holder.
	if !s.Blocks(Op{Kind: Expire, Worker: "w1", Event: "e1"}) {
		t.Error("Expire(e1) naming w1 does not block behind w1's lock")
	}
}

func TestEligibleAndIsCurrent(t *testing.T) {
	s := play(t, FIFO, "Enqueue(e1) -> ok", "Enqueue(e2) -> ok", "Enqueue(e3) -> ok", "Enqueue(e4) -> ok",
		"w1.Claim() -> claimed e1 gen=1", "w2.Claim() -> claimed e2 gen=1", "Expire(e2) -> ok", "w3.Begin() -> claimed e2 gen=2")
	if got, want := s.Eligible(), []string{"e3", "e4"}; !slices.Equal(got, want) {
		t.Errorf("Eligible() = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		c    Claim
		want bool
	}{
		{Claim{"w1", "e1", 1, 0}, true},
		{Claim{"w1", "e1", 2, 0}, false},
		{Claim{"w2", "e2", 1, 0}, false}, // expired
		{Claim{"w3", "e2", 2, 0}, false}, // not committed
		{Claim{"w1", "e3", 0, 0}, false},
		{Claim{"w1", "e9", 1, 0}, false},
	} {
		// A claim as a worker knows it: the latest it received of the row
		// at that generation (ClaimOf), or none.
		c := s.ClaimOf(Op{Kind: Complete, Worker: tc.c.Worker, Event: tc.c.Event, Gen: tc.c.Gen})
		if got := s.IsCurrent(c); got != tc.want {
			t.Errorf("IsCurrent(%v) = %v, want %v", tc.c, got, tc.want)
		}
	}
}
