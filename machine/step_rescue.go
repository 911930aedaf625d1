package machine

import (
	"fmt"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
	"pgregory.net/rapid"
)

// Rescue(): the rescuer's maintenance pass, the protocol's rescue section.

// rescue runs the rescuer's maintenance pass. One that could wait on an
// open claim transaction's row lock runs as a waiting step (wait.go) when
// it may, else not at all.
func (r *run) rescue(t *rapid.T) {
	if err := r.mayRescue(); err != nil {
		t.Skip(err.Error())
	}
	r.runOp(model.Op{Kind: model.Rescue})
}

// mayRescue: the rescuer's pass needs a rescue section, the rescuer free,
// no split open (a rescue may lock rows of other tables, a worker's
// heartbeat, that the split's first part holds: the probe knows only the
// events'), and a lock on a row only as a waiting step.
func (r *run) mayRescue() error {
	op := model.Op{Kind: model.Rescue}
	switch {
	case !r.h.Inst.Proto.Has(sut.Rescue):
		return fmt.Errorf("the protocol has no rescue section")
	case r.inFlight.splitOpen():
		return fmt.Errorf("a split is open")
	case r.busy(rescuer) || r.blocks(op) && r.waitsOn(op) == "":
		return fmt.Errorf("the rescue would wait on an open claim transaction")
	}
	return nil
}

func init() {
	registerStep(stepKind{
		may: func(r *run, _ model.Op) error { return r.mayRescue() },
		run: execStep(func(r *run, _ model.Op) model.Outcome { return r.runRescue() }),
	}, model.Rescue)
}
