package machine

import (
	"fmt"

	"github.com/outboxlab/outboxlab/model"
	"pgregory.net/rapid"
)

// Enqueue(e): the next event's row, inserted as a producer does, one
// transaction each.

func (r *run) enqueue(t *rapid.T) {
	op := model.Op{Kind: model.Enqueue, Event: EventName(r.nextEvent)}
	if err := r.mayEnqueue(op); err != nil {
		t.Skip(err.Error())
	}
	r.runOp(op)
}

// mayEnqueue: an enqueue adds the next event, up to the configured
// number.
func (r *run) mayEnqueue(op model.Op) error {
	if op.Event != EventName(r.nextEvent) || r.nextEvent >= r.h.Cfg.MaxEvents {
		return fmt.Errorf("the next event is %s, at most %d", EventName(r.nextEvent), r.h.Cfg.MaxEvents)
	}
	return nil
}

func init() {
	registerStep(stepKind{(*run).mayEnqueue, func(r *run, op model.Op) model.Outcome {
		r.nextEvent++
		return r.exec(op, func() model.Outcome { return r.runEnqueue(op.Event) })
	}}, model.Enqueue)
}
