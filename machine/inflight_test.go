package machine

import (
	"slices"
	"testing"

	"github.com/outboxlab/outboxlab/model"
)

// What the other kinds of step read of a waiting step and an open split.
func TestInFlight(t *testing.T) {
	var f inFlight
	if f.any() || f.splitOpen() || len(f.holders()) != 0 || f.waitsOnTxOf("w2") {
		t.Fatalf("nothing begun, yet in flight: %+v", f)
	}
	f.waiting = &model.Op{Kind: model.Rescue}
	f.waitOn = "w2"
	if !f.any() || f.splitOpen() || !f.waitsOnTxOf("w2") || f.waitsOnTxOf("w1") {
		t.Errorf("a rescue waiting on w2: any %v, split %v, waits on w2 %v, on w1 %v", f.any(), f.splitOpen(), f.waitsOnTxOf("w2"), f.waitsOnTxOf("w1"))
	}
	f.split = &model.Op{Kind: model.ClaimOp, Worker: "w3", Part: model.Part{Upto: 1, Of: 2}}
	if !f.splitOpen() || !f.splitOpen(model.Rescue, model.ClaimOp) || f.splitOpen(model.Rescue) {
		t.Errorf("a claim split: open %v, claim's %v, rescue's %v", f.splitOpen(), f.splitOpen(model.ClaimOp), f.splitOpen(model.Rescue))
	}
	if got, want := f.holders(), []string{rescuer, "w3"}; !slices.Equal(got, want) {
		t.Errorf("holders %v, want %v", got, want)
	}
	f.waitEnded = [][]model.RowView{{{Event: "e1"}}}
	if got := f.takeWaitEnded(); len(got) != 1 || f.takeWaitEnded() != nil {
		t.Errorf("the rows a waiting step's end is checked from are taken once: %v", got)
	}
}
