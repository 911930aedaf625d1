package model

import "testing"

func row(event string, status Status, gen int64, leased, expired, due bool) RowView {
	return RowView{Event: event, Status: status, Gen: gen, HasGen: true, LeaseHeld: leased, LeaseExpired: expired, Due: due}
}

var (
	readyDue    = row("e1", Ready, 0, false, false, true)
	readyWait   = row("e1", Ready, 1, false, false, false)
	owned1      = row("e1", InProgress, 1, true, false, false)
	expired1    = row("e1", InProgress, 1, true, true, false)
	owned2      = row("e1", InProgress, 2, true, false, false)
	owned3      = row("e1", InProgress, 3, true, false, false)
	sent1       = row("e1", Sent, 1, false, false, false)
	sent2       = row("e1", Sent, 2, false, false, false)
	other       = row("e2", Ready, 0, false, false, true)
	otherOwned1 = row("e2", InProgress, 1, true, false, false)
)

func TestCheckRows(t *testing.T) {
	tests := []struct {
		name string
		rows []RowView
		want string
	}{
		{"valid", []RowView{readyDue, otherOwned1}, ""},
		{"empty", nil, ""},
		{"ready with a lease", []RowView{row("e1", Ready, 0, true, false, true)}, "lease/status check: e1 is READY with a lease"},
		{"sent with a lease", []RowView{row("e1", Sent, 1, true, true, false)}, "lease/status check: e1 is SENT with a lease"},
		{"inprogress without a lease", []RowView{row("e1", InProgress, 1, false, false, false)}, "lease/status check: e1 is INPROGRESS without a lease"},
		{"unknown status", []RowView{row("e1", "DONE", 1, false, false, false)}, `lease/status check: e1 has status "DONE", want READY, INPROGRESS, SENT or DEAD`},
		{"duplicate event", []RowView{readyDue, owned1}, "event ids are unique (e1 appears twice)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := errText(CheckRows(tc.rows)); got != tc.want {
				t.Errorf("CheckRows = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCheckChange(t *testing.T) {
	claim := Op{Kind: ClaimOp, Worker: "w1"}
	complete := Op{Kind: Complete, Worker: "w1", Event: "e1", Gen: 1}
	retry := Op{Kind: Retry, Worker: "w1", Event: "e1", Gen: 1}
	claimed := Outcome{Kind: Claimed, Event: "e1", Gen: 1}
	applied, rejected := Outcome{Kind: Applied}, Outcome{Kind: Rejected}
	unknown, empty, ok := Outcome{Kind: Unknown}, Outcome{Kind: Empty}, Outcome{Kind: OK}
	noGen := func(v RowView) RowView { v.Gen, v.HasGen = 0, false; return v }
	tests := []struct {
		name          string
		before, after []RowView
		op            Op
		out           Outcome
		want          string
	}{
		{"claim", []RowView{readyDue, other}, []RowView{owned1, other}, claim, claimed, ""},
		{"reclaim", []RowView{expired1}, []RowView{owned2}, claim, Outcome{Kind: Claimed, Event: "e1", Gen: 2}, ""},
		{"commit", []RowView{readyDue}, []RowView{owned1}, Op{Kind: Commit, Worker: "w1"}, ok, ""},
		{"unknown complete that claimed", []RowView{expired1}, []RowView{owned2}, complete, unknown, ""},
		{"complete", []RowView{owned1}, []RowView{sent1}, complete, applied, ""},
		{"retry", []RowView{owned1}, []RowView{readyWait}, retry, applied, ""},
		{"enqueue adds a row", nil, []RowView{readyDue}, Op{Kind: Enqueue, Event: "e1"}, ok, ""},
		{"rejected changes nothing", []RowView{owned2}, []RowView{owned2}, complete, rejected, ""},
		{"without generations", []RowView{noGen(readyDue)}, []RowView{noGen(owned3)}, complete, applied, ""},
		{"SENT to READY", []RowView{sent1}, []RowView{readyWait}, retry, applied, "SENT is terminal: e1 went SENT -> READY"},
		{"SENT reclaimed", []RowView{sent1}, []RowView{owned2}, claim, claimed, "SENT is terminal: e1 went SENT -> INPROGRESS"},
		{"SENT regenerated", []RowView{sent1}, []RowView{sent2}, claim, unknown, "SENT is terminal: e1 went SENT gen=1 -> SENT gen=2"},
		{"generation skips", []RowView{expired1}, []RowView{owned3}, claim, claimed, "generation must rise by exactly one per claim: e1 went 1 -> 3"},
		{"generation falls", []RowView{owned2}, []RowView{owned1}, claim, unknown, "generation never decreases: e1 went 2 -> 1"},
		{"generation rises on complete", []RowView{expired1}, []RowView{owned2}, complete, applied, "generation rises only with a committed claim: e1 went 1 -> 2"},
		{"generation rises on begin", []RowView{readyDue}, []RowView{owned1}, Op{Kind: Begin, Worker: "w1"}, claimed, "generation rises only with a committed claim: e1 went 0 -> 1"},
		{"two rows claimed", []RowView{readyDue, other}, []RowView{owned1, otherOwned1}, claim, claimed, "one claim takes one row: e1 and e2 both rose"},
		{"rejected complete changed a row", []RowView{expired1}, []RowView{sent1}, complete, rejected, "a rejected step changes nothing: e1 went INPROGRESS gen=1 expired -> SENT gen=1"},
		{"rejected renew extended the lease", []RowView{expired1}, []RowView{owned1}, Op{Kind: Renew, Worker: "w1", Event: "e1", Gen: 1}, rejected, "a rejected step changes nothing: e1 went INPROGRESS gen=1 expired -> INPROGRESS gen=1 live"},
		{"empty claim changed a row", []RowView{readyWait}, []RowView{row("e1", Ready, 1, false, false, true)}, claim, empty, "an empty claim changes nothing: e1 went READY gen=1 waiting -> READY gen=1 due"},
		{"rejected step added a row", nil, []RowView{readyDue}, complete, rejected, "a rejected step changes nothing: 0 rows became 1"},
		{"row deleted", []RowView{readyDue, other}, []RowView{other}, complete, applied, "rows are never deleted: e1 disappeared"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := errText(CheckChange(Policy{}, tc.before, tc.after, tc.op, tc.out)); got != tc.want {
				t.Errorf("CheckChange = %q, want %q", got, tc.want)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
