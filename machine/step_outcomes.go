package machine

import (
	"fmt"

	"github.com/outboxlab/outboxlab/model"
	"pgregory.net/rapid"
)

// A worker's outcome for one of its claims: Complete, Retry, Renew, sent
// for the current claim or, by the stale actions, for one that is no
// longer current (the paused worker waking up late).

// outcome runs complete, retry or renew with one of a worker's claims: a
// current one, or with stale set, one that is no longer current (expired,
// reclaimed, completed or retried): the paused worker waking up late.
func (r *run) outcome(t *rapid.T, kind model.Kind, stale bool) {
	s := r.model()
	var cands []model.Claim
	for _, c := range s.Claims {
		op := model.Op{Kind: kind, Worker: c.Worker, Event: c.Event, Gen: c.Gen, Claim: c.ID}
		if s.IsCurrent(c) != stale && r.mayOutcome(op) == nil {
			cands = append(cands, c)
		}
	}
	c := pick(t, "claim", cands)
	r.runOp(model.Op{Kind: kind, Worker: c.Worker, Event: c.Event, Gen: c.Gen, Claim: c.ID})
}

// mayOutcome: a complete, retry or renew needs the claim it names, sent by
// the worker that received it, running outside a transaction with a
// server connection free; a lock on the row only as a waiting step
// (wait.go); and the row itself, unless a rewind took its enqueue away (to
// the server the row never existed, and a section with an applied column,
// which must return one row, has none to return).
func (r *run) mayOutcome(op model.Op) error {
	s, w := r.model(), op.Worker
	switch {
	case op.Kind == model.Renew && !r.h.Inst.Proto.Has("renew"):
		return fmt.Errorf("the protocol has no renew section")
	case s.ClaimOf(op).ID == 0:
		return fmt.Errorf("%s never received that claim", w)
	case r.busy(w):
		return fmt.Errorf("%s: %w", w, errBusy)
	case !r.running(w) || r.inTx(w) || !r.serverConnFree(w):
		return fmt.Errorf("%s is not running outside a transaction with a server connection free", w)
	case r.blocks(op) && r.waitsOn(op) == "":
		return fmt.Errorf("%v would wait on a lock it may not wait on", op)
	case rowIndex(s, op.Event) < 0 && !s.Policy.Delete:
		return fmt.Errorf("a rewind took %s's enqueue away", op.Event)
	}
	return nil
}

func init() {
	registerStep(stepKind{(*run).mayOutcome, execStep((*run).runOutcome)}, model.Complete, model.Retry, model.Renew)
}
