package machine

import (
	"github.com/outboxlab/outboxlab/model"
	"pgregory.net/rapid"
)

// spend is the spend action, for a protocol with an attempt budget
// (max_attempts): an attempt spent as a dead worker spends it. A live
// claim's lease expires, the rescue runs where the protocol has one (its
// claim takes no expired lease), and another worker claims. A row reaches
// its last attempt only through that chain, once per attempt, and the
// budget's mistakes (a burial one attempt early, a last attempt retried,
// a reaper or a claim that buries the wrong row, or buries by id what its
// owner finished meanwhile) wait there: drawn one action at a time, the
// chain came rarely enough that split_claim_bury_read_then_write passed
// the default budget on seed 4.
func (r *run) spend(t *rapid.T) {
	if r.split != nil || r.waiting != nil {
		t.Skip("a split is open or a step waits")
	}
	s := r.model()
	budget := int64(s.Policy.MaxAttempts)
	var cands []model.Claim
	for _, c := range s.Claims {
		i := rowIndex(s, c.Event)
		if i < 0 || !s.IsCurrent(c) || s.Rows[i].Gen >= budget || r.blocks(model.Op{Kind: model.Expire, Event: c.Event}) {
			continue
		}
		cands = append(cands, c)
	}
	c := pick(t, "spend", cands)
	r.exec(model.Op{Kind: model.Expire, Event: c.Event}, func() model.Outcome { return r.runFixture(model.Expire, c.Event) })
	if r.h.Inst.Proto.Has("rescue") {
		op := model.Op{Kind: model.Rescue}
		if r.split != nil || r.waiting != nil || r.busy(rescuer) || r.blocks(op) {
			return // the rescue would wait: the expiry is the step
		}
		r.exec(op, func() model.Outcome { return r.runRescue() })
	}
	ws := r.workersWhere(func(w string) bool { return w != c.Worker && r.canClaim(w) })
	if len(ws) == 0 || r.waiting != nil {
		return
	}
	w := rapid.SampledFrom(ws).Draw(t, "worker")
	op := model.Op{Kind: model.ClaimOp, Worker: w}
	r.exec(op, func() model.Outcome { return r.runClaim(op) })
}
