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
	r.clock.latest = map[string]time.Time{"e1": now.Add(-lease / 2)}
	r.clock.first = map[string]time.Time{"e1": now.Add(-2 * lease)}
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
		r.clock.rewound = c.rewound
		if got := r.leaseRanOut(c.row); got != c.want {
			t.Errorf("rewound %v, %+v: ran out %v, want %v", c.rewound, c.row, got, c.want)
		}
	}
	r.clock.rewound = false
	s := model.State{Rows: []model.Row{aged, {Event: "e2", Status: model.Ready}}}
	states, note := r.byClock([]model.State{s})
	if len(states) != 2 || note == "" {
		t.Errorf("byClock of an aged lease past its 40%%: %d states, note %q; want it live and run out, and a note", len(states), note)
	}
	r.clock.latest["e1"] = now
	if states, note := r.byClock([]model.State{s}); states != nil || note != "" {
		t.Errorf("byClock of a lease granted now: %d states, note %q; want none", len(states), note)
	}
}

// TestLeaseClock: a grant counts from its step's start; the first grant
// counts once the server may have rewound; a lease the clock never saw
// granted is neither spent nor old.
func TestLeaseClock(t *testing.T) {
	var c leaseClock
	c.stepStart = time.Now().Add(-10 * time.Second)
	c.granted([]string{"e1"})
	c.stepStart = time.Now().Add(-time.Second)
	c.granted([]string{"e1", "e2"})
	if age, seen := c.age("e1"); !seen || age < time.Second || age > 5*time.Second {
		t.Errorf("e1's age %v (seen %v), want about a second: the latest grant", age, seen)
	}
	if c.spent("e1", 5*time.Second, false) || !c.spent("e1", 2*time.Second, true) {
		t.Errorf("e1, granted a second ago: spent at 5s, or not at 40%% of 2s")
	}
	c.rewound = true
	if !c.spent("e1", 5*time.Second, false) || c.spent("e2", 5*time.Second, false) {
		t.Errorf("after a rewind: e1's first grant, 10s ago, must count, and e2's only one")
	}
	if !c.within("e3", time.Nanosecond) || c.spent("e3", time.Nanosecond, false) {
		t.Errorf("e3, never granted: want within any window and never spent")
	}
	if c.within("e1", 5*time.Second) || !c.within("e2", 5*time.Second) {
		t.Errorf("within 5s: e1 (10s since its first grant) must not be, e2 must")
	}
}
