package machine

import (
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/model"
)

// TestLeaseRanOutByTheClock: a lease may have run out once its declared
// length has passed since its grant (40% of it after an Age), counted
// from the latest grant, or from the first after a step that may have
// rewound the server to an earlier one.
func TestLeaseRanOutByTheClock(t *testing.T) {
	r, _ := offlineRun(t, "../testdata/correct/leased_renew.sql", []string{"w1"})
	lease := r.h.Inst.Proto.Lease // 30s
	now := time.Now()
	r.grantedAt = map[string]time.Time{"e1": now.Add(-lease / 2)}
	r.firstGrantedAt = map[string]time.Time{"e1": now.Add(-2 * lease)}
	fresh := model.Row{Event: "e1", Status: model.InProgress, LeaseLive: true}
	aged := fresh
	aged.Aged = true
	for _, c := range []struct {
		rewound bool
		row     model.Row
		want    bool
	}{
		{false, fresh, false}, // half the lease since the latest grant
		{false, aged, true},   // more than the 40% an Age leaves
		{true, fresh, true},   // two leases since the first grant
		{false, model.Row{Event: "e2", Status: model.InProgress, LeaseLive: true}, false}, // no grant kept
	} {
		r.rewound = c.rewound
		if got := r.leaseRanOut(c.row); got != c.want {
			t.Errorf("rewound %v, %+v: ran out %v, want %v", c.rewound, c.row, got, c.want)
		}
	}
	r.rewound = false
	s := model.State{Rows: []model.Row{aged, {Event: "e2", Status: model.Ready}}}
	states, note := r.byClock([]model.State{s})
	if len(states) != 2 || note == "" {
		t.Errorf("byClock of an aged lease past its 40%%: %d states, note %q; want it live and run out, and a note", len(states), note)
	}
	r.grantedAt["e1"] = now
	if states, note := r.byClock([]model.State{s}); states != nil || note != "" {
		t.Errorf("byClock of a lease granted now: %d states, note %q; want none", len(states), note)
	}
}
