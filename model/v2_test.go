package model

import (
	"slices"
	"strings"
	"testing"
)

// Table tests for the version-2 policy: batches, the rescue, the lenient
// policy, the attempt budget and done=delete.

func enqueued(p Policy, events ...string) []string {
	var out []string
	for _, e := range events {
		out = append(out, "Enqueue("+e+") -> ok")
	}
	return out
}

func TestV2Outcomes(t *testing.T) {
	fifo3 := Policy{Order: FIFO, Batch: 3}
	tests := []struct {
		name    string
		policy  Policy
		program []string
		op      string
		want    string // the allowed outcomes, " | " between
	}{
		{"batch takes the earliest rows", Policy{Order: FIFO, Batch: 2}, enqueued(fifo3, "e1", "e2", "e3"),
			"w1.Claim()", "claimed e1 gen=1, e2 gen=1"},
		{"batch takes all when fewer are eligible", fifo3, enqueued(fifo3, "e1", "e2"),
			"w1.Claim()", "claimed e1 gen=1, e2 gen=1"},
		{"batch under any: every set of that size", Policy{Order: Any, Batch: 2}, enqueued(fifo3, "e1", "e2", "e3"),
			"w1.Claim()", "claimed e1 gen=1, e2 gen=1 | claimed e1 gen=1, e3 gen=1 | claimed e2 gen=1, e3 gen=1"},
		{"with a rescue, a claim may leave an expired lease", Policy{Order: FIFO, Rescue: true},
			append(enqueued(fifo3, "e1"), "w1.Claim() -> claimed e1 gen=1", "Expire(e1) -> ok"),
			"w2.Claim()", "claimed e1 gen=2 | empty"},
		{"lenient: an expired owner may finish", Policy{Order: FIFO, Lenient: true},
			append(enqueued(fifo3, "e1"), "w1.Claim() -> claimed e1 gen=1", "Expire(e1) -> ok"),
			"w1.Complete(e1, gen=1)", "applied | rejected"},
		{"lenient: not after a reclaim", Policy{Order: FIFO, Lenient: true},
			append(enqueued(fifo3, "e1"), "w1.Claim() -> claimed e1 gen=1", "Expire(e1) -> ok", "w2.Claim() -> claimed e1 gen=2"),
			"w1.Complete(e1, gen=1)", "rejected"},
		{"lenient with a rescue section: allowed until one runs", Policy{Order: FIFO, Lenient: true, Rescue: true},
			append(enqueued(fifo3, "e1"), "w1.Claim() -> claimed e1 gen=1", "Expire(e1) -> ok"),
			"w1.Complete(e1, gen=1)", "applied | rejected"},
		{"strict: an expired owner is rejected", Policy{Order: FIFO},
			append(enqueued(fifo3, "e1"), "w1.Claim() -> claimed e1 gen=1", "Expire(e1) -> ok"),
			"w1.Complete(e1, gen=1)", "rejected"},
		{"budget: an exhausted row is not claimable", Policy{Order: FIFO, MaxAttempts: 1},
			append(enqueued(fifo3, "e1"), "w1.Claim() -> claimed e1 gen=1", "Expire(e1) -> ok"),
			"w2.Claim()", "empty"},
		{"budget: the claim may not take past it", Policy{Order: FIFO, MaxAttempts: 2},
			append(enqueued(fifo3, "e1"), "w1.Claim() -> claimed e1 gen=1", "Expire(e1) -> ok"),
			"w2.Claim()", "claimed e1 gen=2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := playFrom(t, NewWith(tc.policy), tc.program...)
			var got []string
			for _, o := range outcomes(s.Step(mustOp(t, tc.op))) {
				if !slices.Contains(got, o) {
					got = append(got, o)
				}
			}
			if strings.Join(got, " | ") != tc.want {
				t.Errorf("%s allows %s, want %s", tc.op, strings.Join(got, " | "), tc.want)
			}
		})
	}
}

func TestV2States(t *testing.T) {
	budget := Policy{Order: FIFO, MaxAttempts: 2}
	claimExpire := []string{"w1.Claim() -> claimed e1 gen=1", "Expire(e1) -> ok"}
	tests := []struct {
		name    string
		policy  Policy
		program []string
		op      string
		want    []string // the rows after op, one string per allowed state
	}{
		{"retry of the last attempt: DEAD at once", budget,
			append(enqueued(budget, "e1"), "w1.Claim() -> claimed e1 gen=1", "w1.Retry(e1, gen=1) -> applied", "MakeDue(e1) -> ok", "w1.Claim() -> claimed e1 gen=2"),
			"w1.Retry(e1, gen=2)", []string{"e1 DEAD gen=2"}},
		{"retry before the last: a backoff", budget,
			append(enqueued(budget, "e1"), "w1.Claim() -> claimed e1 gen=1"),
			"w1.Retry(e1, gen=1)", []string{"e1 READY gen=1 waiting"}},
		{"an abandoned last attempt: the next claim buries it", Policy{Order: FIFO, MaxAttempts: 1},
			append(enqueued(budget, "e1", "e2"), claimExpire...),
			"w2.Claim()", []string{"e1 DEAD gen=1, e2 INPROGRESS gen=1 live"}},
		{"with a rescue the claim may leave the burying to it", Policy{Order: FIFO, MaxAttempts: 1, Rescue: true},
			append(enqueued(budget, "e1"), claimExpire...),
			"w2.Claim()", []string{"e1 DEAD gen=1", "e1 INPROGRESS gen=1 expired"}},
		{"rescue: an exhausted attempt goes DEAD", Policy{Order: FIFO, MaxAttempts: 1, Rescue: true},
			append(enqueued(budget, "e1"), claimExpire...),
			"Rescue()", []string{"e1 DEAD gen=1"}},
		{"rescue: an expired claim stays, or is READY due or waiting", Policy{Order: FIFO, Rescue: true},
			append(enqueued(budget, "e1", "e2"), append(claimExpire, "w1.Claim() -> claimed e2 gen=1")...),
			"Rescue()", []string{"e1 INPROGRESS gen=1 expired, e2 INPROGRESS gen=1 live", "e1 READY gen=1 due, e2 INPROGRESS gen=1 live", "e1 READY gen=1 waiting, e2 INPROGRESS gen=1 live"}},
		{"done=delete: a complete may remove the row", Policy{Order: FIFO, Delete: true},
			append(enqueued(budget, "e1", "e2"), "w1.Claim() -> claimed e1 gen=1"),
			"w1.Complete(e1, gen=1)", []string{"e1 SENT gen=1, e2 READY gen=0 due", "e2 READY gen=0 due"}},
		{"a batch in a transaction commits every row", Policy{Order: FIFO, Batch: 2},
			append(enqueued(budget, "e1", "e2"), "w1.Begin() -> claimed e1 gen=1, e2 gen=1"),
			"w1.Commit()", []string{"e1 INPROGRESS gen=1 live, e2 INPROGRESS gen=1 live"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := playFrom(t, NewWith(tc.policy), tc.program...)
			var got []string
			for _, tr := range s.Step(mustOp(t, tc.op)) {
				got = append(got, rows(tr.Next))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s leaves\n  %s\nwant\n  %s", tc.op, strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

// TestV2Explain: each new way to break the policy has its own rule.
func TestV2Explain(t *testing.T) {
	two := Policy{Order: FIFO, Batch: 2}
	tests := []struct {
		name    string
		policy  Policy
		program []string
		step    string
		want    string
	}{
		{"a batch claim that takes too few", two, enqueued(two, "e1", "e2"),
			"w1.Claim() -> claimed e1 gen=1", "batch claim left e2 claimable (it took 1 rows with batch=2)"},
		{"a batch claim out of order", two, enqueued(two, "e1", "e2", "e3"),
			"w1.Claim() -> claimed e2 gen=1, e3 gen=1", "claim took e2 out of order: e1 is claimable first"},
		{"a DEAD row claimed", Policy{Order: FIFO, MaxAttempts: 1},
			append(enqueued(two, "e1"), "w1.Claim() -> claimed e1 gen=1", "w1.Retry(e1, gen=1) -> applied"),
			"w1.Claim() -> claimed e1 gen=2", "claim took e1, a DEAD row (DEAD is terminal)"},
		{"a claim past the budget", Policy{Order: FIFO, MaxAttempts: 1},
			append(enqueued(two, "e1"), "w1.Claim() -> claimed e1 gen=1", "Expire(e1) -> ok"),
			"w2.Claim() -> claimed e1 gen=2", "claim took e1 past its attempt budget (it was claimed 1 times; max_attempts=1)"},
		{"lenient: a stale complete after a reclaim", Policy{Order: FIFO, Lenient: true},
			append(enqueued(two, "e1"), "w1.Claim() -> claimed e1 gen=1", "Expire(e1) -> ok", "w2.Claim() -> claimed e1 gen=2"),
			"w1.Complete(e1, gen=1) -> applied", "stale owner's complete applied (e1 gen 1 is not the current live claim: e1 is at gen 2)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := playFrom(t, NewWith(tc.policy), tc.program...)
			op, got, err := ParseStep(tc.step)
			if err != nil {
				t.Fatal(err)
			}
			msg := errText(Explain(s, op, got, s.Step(op)))
			if want := tc.step + ": " + tc.want; msg != want {
				t.Errorf("Explain = %q\nwant      %q", msg, want)
			}
		})
	}
}

// TestV2ExplainRows: the budget's and the rescue's rules on the rows.
func TestV2ExplainRows(t *testing.T) {
	budget := Policy{Order: FIFO, MaxAttempts: 1, Rescue: true}
	expired := RowView{Event: "e1", Status: InProgress, Gen: 1, HasGen: true, LeaseHeld: true, LeaseExpired: true}
	ready := RowView{Event: "e1", Status: Ready, Gen: 1, HasGen: true, Due: true}
	dead := RowView{Event: "e1", Status: Dead, Gen: 1, HasGen: true}
	tests := []struct {
		name     string
		policy   Policy
		program  []string
		op       string
		observed RowView
		want     string
	}{
		{"a rescue that leaves an exhausted event", budget,
			append(enqueued(budget, "e1"), "w1.Claim() -> claimed e1 gen=1", "Expire(e1) -> ok", "Rescue() -> ok"),
			"Rescue()", expired, "rescue left an exhausted event alive"},
		{"a retry of the last attempt kept READY", budget,
			append(enqueued(budget, "e1"), "w1.Claim() -> claimed e1 gen=1", "w1.Retry(e1, gen=1) -> applied"),
			"w1.Retry(e1, gen=1)", ready, "retry of the last attempt did not make e1 DEAD"},
		{"DEAD too early", Policy{Order: FIFO, MaxAttempts: 2},
			append(enqueued(budget, "e1"), "w1.Claim() -> claimed e1 gen=1", "w1.Retry(e1, gen=1) -> applied"),
			"w1.Retry(e1, gen=1)", dead, "event went DEAD before its attempt budget was spent"},
		{"a rescue that takes a live lease", Policy{Order: FIFO, Rescue: true},
			append(enqueued(budget, "e1"), "w1.Claim() -> claimed e1 gen=1", "Rescue() -> ok"),
			"Rescue()", ready, "rescue took e1 whose lease is live"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := playFrom(t, NewWith(tc.policy), tc.program...)
			if rule, _ := ExplainRows(mustOp(t, tc.op), s, []RowView{tc.observed}); rule != tc.want {
				t.Errorf("ExplainRows = %q, want %q", rule, tc.want)
			}
		})
	}
}

// TestV2CheckChange: done=delete lets a row leave only by its complete.
func TestV2CheckChange(t *testing.T) {
	sent := RowView{Event: "e1", Status: InProgress, Gen: 1, HasGen: true, LeaseHeld: true}
	del := Policy{Order: FIFO, Delete: true}
	complete := Op{Kind: Complete, Worker: "w1", Event: "e1", Gen: 1}
	if err := CheckChange(del, []RowView{sent}, nil, complete, Outcome{Kind: Applied}); err != nil {
		t.Errorf("a complete that applied may delete: %v", err)
	}
	retry := Op{Kind: Retry, Worker: "w1", Event: "e1", Gen: 1}
	want := "lost event: e1 left the state without a complete that applied (done=delete; it went away at w1.Retry(e1, gen=1) while INPROGRESS gen=1 live)"
	if got := errText(CheckChange(del, []RowView{sent}, nil, retry, Outcome{Kind: Applied})); got != want {
		t.Errorf("CheckChange = %q, want %q", got, want)
	}
	if got := errText(CheckChange(Policy{}, []RowView{sent}, nil, complete, Outcome{Kind: Applied})); got != "rows are never deleted: e1 disappeared" {
		t.Errorf("without done=delete: %q", got)
	}
	dead := RowView{Event: "e1", Status: Dead, Gen: 1, HasGen: true}
	ready := RowView{Event: "e1", Status: Ready, Gen: 1, HasGen: true, Due: true}
	if got := errText(CheckChange(Policy{MaxAttempts: 1}, []RowView{dead}, []RowView{ready}, Op{Kind: Rescue}, Outcome{Kind: OK})); got != "DEAD is terminal (e1 went DEAD gen=1 -> READY gen=1 due)" {
		t.Errorf("DEAD terminal: %q", got)
	}
}
