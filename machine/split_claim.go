package machine

import (
	"fmt"

	"github.com/outboxlab/outboxlab/model"
	"pgregory.net/rapid"
)

// Split claims (model/split_claim.go says how the model judges them). A
// claim of several statements runs its first part in a new open
// transaction on its worker's connection; the rows that part locked are
// held for it (holdSplitRows), as for an outcome's split. The steps that
// bring its race closer change a row its read found: another worker's
// claim takes it, its owner finishes it. A claim whose last part then
// writes that row by id without looking again takes it from its new owner,
// or buries a finished row; one whose last part re-checks comes back with
// less, which the model allows.

// canSplitClaim says why w cannot begin a split claim now, or nil.
func (r *run) canSplitClaim(w string) error {
	switch {
	case !r.running(w) || r.inTx(w) || r.busy(w) || r.procs.Stale(w):
		// (A connection a restart broke while w was paused answers the
		// first part with an error: the split would be lost at once.)
		return fmt.Errorf("%s is not running free of a transaction", w)
	case !r.serverConnFree(w):
		return fmt.Errorf("every server connection of the pool is held: %s would wait for one", w)
	case r.ownsExpiredClaim(w):
		// The race a claim split stands for needs that owner free to
		// finish its row between the claim's statements.
		return fmt.Errorf("%s owns an expired claim: another worker splits the claim", w)
	}
	return nil
}

// ownsExpiredClaim reports whether w holds the current claim of a row
// whose lease ran out.
func (r *run) ownsExpiredClaim(w string) bool {
	s := r.model()
	for _, c := range s.Claims {
		i := rowIndex(s, c.Event)
		if c.Worker == w && i >= 0 && s.Rows[i].Status == model.InProgress && !s.Rows[i].LeaseLive && s.Rows[i].Gen == c.Gen {
			return true
		}
	}
	return false
}

// advanceClaimSplit is the split action while a claim is split: its last
// part (once a step has run since its first), or a step that changes a
// row its read found: the owner's complete or retry of it (under a lenient
// policy an expired owner may still finish), else another worker's claim.
func (r *run) advanceClaimSplit(t *rapid.T) {
	if r.splitStepped && rapid.Bool().Draw(t, "split_finish") {
		r.runSplitLast()
		return
	}
	r.splitStepped = true
	splitter := r.split.Worker
	free := func(w string) bool {
		return w != splitter && r.running(w) && !r.inTx(w) && !r.busy(w) && r.serverConnFree(w)
	}
	var cands []model.Op
	s := r.model()
	for _, c := range s.Claims {
		i := rowIndex(s, c.Event)
		if i < 0 || s.Rows[i].ReadBy != splitter || s.Rows[i].Gen != c.Gen || !free(c.Worker) {
			continue
		}
		for _, k := range []model.Kind{model.Complete, model.Retry} {
			if op := (model.Op{Kind: k, Worker: c.Worker, Event: c.Event, Gen: c.Gen, Claim: c.ID}); !r.blocks(op) {
				cands = append(cands, op)
			}
		}
	}
	if len(cands) == 0 {
		// No owner can finish a row the read found: another claim may
		// take one.
		for _, w := range r.workersWhere(free) {
			cands = append(cands, model.Op{Kind: model.ClaimOp, Worker: w})
		}
	}
	if len(cands) == 0 {
		r.runSplitLast()
		return
	}
	op := pick(t, "step", cands)
	if op.Kind == model.ClaimOp {
		r.exec(op, func() model.Outcome { return r.runClaim(op) })
		return
	}
	r.exec(op, func() model.Outcome { return r.runOutcome(op) })
}

// expireForClaimSplit is the split action's race for a claim split over a
// spent attempt, taken whenever there is one to take: the expiry of a live
// claim at its last attempt whose owner is free, a claim split by another
// worker (its first part may read the row spent), and the owner's complete
// or retry of it while the claim is split. A spent row lives only until the
// next claim buries it, and the owner may be paused the next step, so the
// three run in one action (as steps of the program, each shrunk on its
// own). It reports whether it ran.
func (r *run) expireForClaimSplit(t *rapid.T) bool {
	of := r.statementsToSplit(model.ClaimOp)
	s := r.model()
	if of == 0 || s.Policy.MaxAttempts == 0 {
		return false
	}
	type race struct {
		expire, split model.Op
		owner         model.Claim
	}
	var cands []race
	for _, c := range s.Claims {
		i := rowIndex(s, c.Event)
		if i < 0 || s.Rows[i].Status != model.InProgress || !s.Rows[i].LeaseLive || s.Rows[i].Gen != c.Gen ||
			c.Gen < int64(s.Policy.MaxAttempts) || !r.running(c.Worker) || r.inTx(c.Worker) || r.busy(c.Worker) {
			continue
		}
		expire := model.Op{Kind: model.Expire, Event: c.Event}
		if r.blocks(expire) {
			continue
		}
		for _, w := range r.workers {
			split := model.Op{Kind: model.ClaimOp, Worker: w, Part: model.Part{Upto: 1, Of: of}}
			if w != c.Worker && r.canSplit(split) == nil {
				cands = append(cands, race{expire, split, c})
			}
		}
	}
	if len(cands) == 0 {
		return false
	}
	c := pick(t, "race", cands)
	r.exec(c.expire, func() model.Outcome { return r.runFixture(model.Expire, c.expire.Event) })
	if r.canSplit(c.split) != nil {
		return true // (the expiry's answer left the worker unable to)
	}
	c.split.Part.Upto = rapid.IntRange(1, of-1).Draw(t, "split_after")
	r.runSplitFirst(c.split)
	// The owner finishes its spent attempt while the claim is split.
	kind := pick(t, "outcome", []model.Kind{model.Complete, model.Retry})
	op := model.Op{Kind: kind, Worker: c.owner.Worker, Event: c.owner.Event, Gen: c.owner.Gen}
	if r.split != nil && r.serverConnFree(op.Worker) && !r.blocks(op) {
		r.exec(op, func() model.Outcome { return r.runOutcome(op) })
		r.splitStepped = true
	}
	return true
}
