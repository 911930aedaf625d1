package model

import (
	"fmt"
	"slices"
	"testing"
)

// The lease as the model follows it: fresh after a claim or an applied
// renew, aged after one Age (60% of the declared lease gone, 40% left),
// and after a second Age either expired or, for a lease granted longer
// than declared, still live.
func TestAge(t *testing.T) {
	claimed := []string{"Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1"}
	aged := append(slices.Clone(claimed), "Age(e1) -> ok")
	tests := []struct {
		name  string
		given []string
		op    string
		want  []string // the committed view after each allowed transition
	}{
		{"a fresh lease outlives one age", claimed, "Age(e1)", []string{"e1 INPROGRESS gen=1 live"}},
		{"an aged lease may expire at the next", aged, "Age(e1)", []string{"e1 INPROGRESS gen=1 expired", "e1 INPROGRESS gen=1 live"}},
		{"age of a READY row does nothing", []string{"Enqueue(e1) -> ok"}, "Age(e1)", []string{"e1 READY gen=0 due"}},
		{"age of an expired lease does nothing", append(slices.Clone(claimed), "Expire(e1) -> ok"), "Age(e1)", []string{"e1 INPROGRESS gen=1 expired"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := play(t, FIFO, tc.given...).Step(mustOp(t, tc.op))
			var got []string
			for _, tr := range ts {
				if tr.Out.Kind != OK {
					t.Fatalf("%s: outcome %v, want ok", tc.op, tr.Out)
				}
				got = append(got, rows(tr.Next))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: rows %q, want %q", tc.op, got, tc.want)
			}
		})
	}
}

// A renew that applied, and a claim, make the lease fresh again: the next
// Age leaves it live.
func TestRenewAndClaimRefreshTheLease(t *testing.T) {
	for _, program := range [][]string{
		{"Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1", "Age(e1) -> ok", "w1.Renew(e1, gen=1) -> applied"},
		{"Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1", "Age(e1) -> ok", "Expire(e1) -> ok", "w2.Claim() -> claimed e1 gen=2"},
	} {
		s := play(t, FIFO, program...)
		if ts := s.Step(Op{Kind: Age, Event: "e1"}); len(ts) != 1 || rows(ts[0].Next) != "e1 INPROGRESS "+genText(s)+" live" {
			t.Errorf("after %q an Age allows %d states, want the lease live in one", program, len(ts))
		}
	}
	renewed := play(t, FIFO, "Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1", "w1.Renew(e1, gen=1) -> applied")
	if !renewed.Rows[0].Renewed {
		t.Error("a renew that applied does not mark the lease as the renew's")
	}
}

func genText(s State) string { return fmt.Sprintf("gen=%d", s.Rows[0].Gen) }

// ExplainRows names a lease found expired after its claim, renew or an
// Age by whoever granted it, and a retried row found due by its lost
// backoff; anything else is left to the generic rule.
func TestExplainRows(t *testing.T) {
	claimed := []string{"Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1"}
	expiredView := []RowView{row("e1", InProgress, 1, true, true, false)}
	tests := []struct {
		name     string
		given    []string
		op       string
		observed []RowView
		want     string
	}{
		{"claim's lease expired at once", claimed, "w1.Claim()", expiredView, "claim granted less than the declared lease"},
		{"claim's lease expired after one age", claimed, "Age(e1)", expiredView, "claim granted less than the declared lease"},
		{"renew's lease expired after one age", append(slices.Clone(claimed), "Age(e1) -> ok", "w1.Renew(e1, gen=1) -> applied"),
			"Age(e1)", expiredView, "renew granted less than the declared lease"},
		{"retry without backoff", append(slices.Clone(claimed), "w1.Retry(e1, gen=1) -> applied"),
			"w1.Retry(e1, gen=1)", []RowView{row("e1", Ready, 1, false, false, true)}, "retry left no backoff"},
		{"an expiry no grant explains", claimed, "w2.Pause()", expiredView, ""},
		{"another status", claimed, "Age(e1)", []RowView{row("e1", Sent, 1, false, false, false)}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := play(t, FIFO, tc.given...)
			if rule, _ := ExplainRows(mustOp(t, tc.op), s, tc.observed); rule != tc.want {
				t.Errorf("rule %q, want %q", rule, tc.want)
			}
		})
	}
}

// An outcome or fixture changes its own row only: another row that changes
// was reached through a wrong id.
func TestCheckChangeOtherRow(t *testing.T) {
	before := []RowView{owned1, otherOwned1}
	after := []RowView{owned1, row("e2", Sent, 1, false, false, false)}
	complete := Op{Kind: Complete, Worker: "w1", Event: "e1", Gen: 1}
	want := "complete changed another event's row (e2 went INPROGRESS gen=1 live -> SENT gen=1)"
	if got := errText(CheckChange(Policy{}, before, after, complete, Outcome{Kind: Applied})); got != want {
		t.Errorf("CheckChange = %q, want %q", got, want)
	}
	claim := Op{Kind: ClaimOp, Worker: "w1"}
	if err := CheckChange(Policy{}, []RowView{readyDue, other}, []RowView{readyDue, otherOwned1}, claim, Outcome{Kind: Claimed, Event: "e2", Gen: 1}); err != nil {
		t.Errorf("a claim of e2 is judged as an outcome on another row: %v", err)
	}
}
