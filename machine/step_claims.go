package machine

import (
	"fmt"

	"github.com/outboxlab/outboxlab/model"
	"pgregory.net/rapid"
)

// A worker's claim, in autocommit (Claim) or opening a claim transaction
// (Begin), and the end of that transaction (Commit, Rollback).

func (r *run) claim(t *rapid.T, kind model.Kind) {
	if kind == model.ClaimOp && r.inFlight.splitOpen(model.ClaimOp) {
		// Another claim would bury or take, by chance, the rows the
		// split's race is about: it runs as the split's step instead.
		t.Skip("a claim is split: other claims run as its steps (split_claim.go)")
	}
	w := pick(t, "worker", r.workersWhere(func(w string) bool { return r.mayClaim(model.Op{Kind: kind, Worker: w}) == nil }))
	r.runOp(model.Op{Kind: kind, Worker: w})
}

func (r *run) endTx(t *rapid.T, kind model.Kind) {
	w := pick(t, "worker", r.workersWhere(func(w string) bool { return r.mayEndTx(w) == nil }))
	r.runOp(model.Op{Kind: kind, Worker: w})
}

// mayClaim: a claim or a claim transaction's Begin needs its worker
// running outside a transaction, with no step waiting and a server
// connection free; no new open transaction while a rescue waits.
func (r *run) mayClaim(op model.Op) error {
	w := op.Worker
	switch {
	case r.busy(w):
		return fmt.Errorf("%s: %w", w, errBusy)
	case !r.running(w) || r.inTx(w):
		return fmt.Errorf("%s is not running outside a transaction", w)
	case !r.serverConnFree(w):
		return fmt.Errorf("every server connection of the pool is held: %s would wait for one", w)
	case op.Kind == model.Begin && r.rescueWaits():
		return fmt.Errorf("a rescue waits: no new open claim transaction")
	}
	return nil
}

// mayEndTx: a commit or rollback needs its worker running inside a
// transaction.
func (r *run) mayEndTx(w string) error {
	switch {
	case r.busy(w):
		return fmt.Errorf("%s: %w", w, errBusy)
	case !r.running(w) || !r.inTx(w):
		return fmt.Errorf("%s is not running inside a transaction", w)
	}
	return nil
}

func init() {
	registerStep(stepKind{
		may: func(r *run, op model.Op) error {
			if err := r.mayClaim(op); err != nil {
				return err
			}
			return r.canReplayExpiring(op)
		},
		run: execStep((*run).runClaim),
	}, model.ClaimOp, model.Begin)
	registerStep(stepKind{
		may: func(r *run, op model.Op) error { return r.mayEndTx(op.Worker) },
		run: execStep(func(r *run, op model.Op) model.Outcome { return r.runEndTx(op.Worker, op.Kind) }),
	}, model.Commit, model.Rollback)
}
