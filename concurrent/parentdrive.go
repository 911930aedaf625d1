package concurrent

import (
	"time"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/worker"
)

// parentOps drives a worker executable's part of a history from the
// parent, one request at a time: the contract has no drive request, so
// the parent makes the draws a Go worker makes by itself (worker.Drawer)
// and runs each as the drain's operations run (history.do), recorded in
// the history as it returns. A kill, a pause or a cut connection reaches
// the request in flight, which do takes as a fault's.
type parentOps struct {
	h *history
	a *actor
}

// Do runs op on the actor's process, starting one if a kill took the
// last (waiting while the server restarts, until the history's end).
func (o parentOps) Do(op model.Op, req worker.Request) (worker.Response, model.OutcomeKind, []worker.Grant, bool) {
	for o.a.process() == nil {
		if o.h.untilEnd() <= 0 || o.h.board.Stopped() {
			return worker.Response{}, "", nil, false
		}
		time.Sleep(20 * time.Millisecond)
	}
	out, resp, ok := o.h.do(o.a, op, req)
	if !ok {
		return resp, "", nil, false
	}
	return resp, out.Kind, grantsOf(out), true
}

// grantsOf is a claim's outcome as the draws count rows: by event number,
// in enqueue order (outcomeOf sorted them).
func grantsOf(out model.Outcome) []worker.Grant {
	var grants []worker.Grant
	for _, g := range out.Grants() {
		grants = append(grants, worker.Grant{Event: worker.EventNumber(g.Event), Gen: g.Gen})
	}
	return grants
}
