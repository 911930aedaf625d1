package machine

import (
	"github.com/outboxlab/outboxlab/model"
)

// rebound is op with its generation rebound, for ReplayRebinding: an
// outcome (a whole complete, retry or renew) whose worker never received
// the claim it names gets the generation of that worker's latest claim of
// the same event in the model, the one it would answer now; any other op,
// or an outcome of a worker with no claim of the event, is op as it is.
//
// A program is written with the generations its run handed out. Take out
// its early steps and the claims that remain come back with lower
// generations, and after a rewind with reissued ones, which no rewriting
// of the program could predict; the replay knows them as it goes.
func (r *run) rebound(op model.Op) model.Op {
	switch op.Kind {
	case model.Complete, model.Retry, model.Renew:
	default:
		return op
	}
	if op.Part.Of > 0 {
		return op
	}
	claims := r.model().Claims
	if r.claimOf(op).ID > 0 {
		return op
	}
	latest, nth := int64(-1), 0
	for _, c := range claims {
		if c.Worker == op.Worker && c.Event == op.Event {
			nth++
			latest = max(latest, c.Gen)
		}
	}
	if latest >= 0 {
		op.Gen = latest
		if op.Fence.Kind == model.ShowNone {
			op.Fence.Nth = nth // the line names the worker's Nth claim: its latest now
		}
	}
	return op
}
