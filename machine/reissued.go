package machine

import (
	"slices"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
	"pgregory.net/rapid"
)

// reissued is the reissued action: an outcome of a claim a rewind took
// away, once the row is at that claim's generation again under another
// claim. It is the step a counter fence cannot refuse, and the state it
// needs (a rewind that lost a claim, then the row's reclaim) is rare
// enough among the stale outcomes to deserve an action of its own.
//
// When a rewind lost a claim and nobody has reclaimed its row yet, the
// action takes the reclaim as its first step: another worker's claim, with
// the row claimable at the lost claim's generation less one, so that the
// next claim hands that generation out again; then the outcome, if the
// claim took that row. Left to the claim action, the reclaim came too late
// or not at all: on async-commit, seed 5 of leased rewound a lost claim in
// 16 of its 100 checks and never sent the stale outcome on a reissued
// generation. Elsewhere the action skips.
func (r *run) reissued(t *rapid.T) {
	cands := r.reissuedOutcomes()
	if len(cands) == 0 {
		r.reclaimLost(t)
		if cands = r.reissuedOutcomes(); len(cands) == 0 {
			return // the claim took another row, or none: a step all the same
		}
	}
	op := pick(t, "reissued", cands)
	r.exec(op, func() model.Outcome { return r.runOutcome(op) })
}

// reissuedOutcomes are the outcomes the reissued action may send now.
func (r *run) reissuedOutcomes() []model.Op {
	s := r.model()
	var cands []model.Op
	for _, c := range s.Lost {
		if !r.lostOwnerFree(c) || !reissuedTo(s, c) {
			continue
		}
		for _, k := range []model.Kind{model.Complete, model.Retry, model.Renew} {
			op := model.Op{Kind: k, Worker: c.Worker, Event: c.Event, Gen: c.Gen, Claim: c.ID}
			if (k != model.Renew || r.h.Inst.Proto.Has(sut.Renew)) && !r.blocks(op) {
				cands = append(cands, op)
			}
		}
	}
	return cands
}

// reclaimLost runs a claim by a worker other than a lost claim's owner
// when the lost claim's row is claimable at the generation before it; it
// skips when no lost claim's row is.
func (r *run) reclaimLost(t *rapid.T) {
	if r.inFlight.any() || len(r.states) > 1 {
		t.Skip("a split is open, a step waits, or the rewind is undecided")
	}
	s := r.model()
	eligible := s.Eligible()
	owners := map[string]bool{}
	for _, c := range s.Lost {
		i := rowIndex(s, c.Event)
		if i >= 0 && r.lostOwnerFree(c) && slices.Contains(eligible, c.Event) && s.Rows[i].Gen+1 == c.Gen {
			owners[c.Worker] = true
		}
	}
	if len(owners) == 0 {
		t.Skip("no lost claim's row is claimable at its generation")
	}
	w := pick(t, "worker", r.workersWhere(func(w string) bool { return !owners[w] && r.mayClaim(model.Op{Kind: model.ClaimOp, Worker: w}) == nil }))
	op := model.Op{Kind: model.ClaimOp, Worker: w}
	r.exec(op, func() model.Outcome { return r.runClaim(op) })
}

// lostOwnerFree reports whether a lost claim's owner can send a step now.
func (r *run) lostOwnerFree(c model.Claim) bool {
	return r.running(c.Worker) && !r.inTx(c.Worker) && !r.busy(c.Worker)
}

// reissuedTo reports whether c's generation is the current claim's of
// its row, another worker's.
func reissuedTo(s model.State, c model.Claim) bool {
	for _, cur := range s.Claims {
		if cur.Event == c.Event && cur.Gen == c.Gen && cur.Worker != c.Worker && s.IsCurrent(cur) {
			return true
		}
	}
	return false
}
