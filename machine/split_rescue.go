package machine

import (
	"fmt"

	"github.com/outboxlab/outboxlab/model"
	"pgregory.net/rapid"
)

// A split rescue. A rescue of several statements (River's rescuer reads
// the stuck jobs into a temporary table, then updates them by id) is the
// same race as a split outcome: what its first statement chose may change
// before its last one writes. The split action runs its first part on the
// rescuer's process, then the steps that change a row it may have chosen
// (the row's owner finishing it, another worker's claim taking it), then
// the rest:
//
//	2. Expire(e1) -> ok
//	3. Rescue() [1/2] -> ok
//	4. w1.Complete(e1, gen=1) -> applied
//	5. Rescue() [2/2] -> ok   // model: e1 stays SENT
//
// No fixture runs while a rescue is split: a lease that expired after the
// rescue's read is one that the read did not choose, and a spent attempt
// the pass would then have to bury (model/split.go).

// canSplitRescue says why a rescue's first part cannot run now, or nil.
func (r *run) canSplitRescue() error {
	op := model.Op{Kind: model.Rescue}
	switch {
	case r.busy(rescuer) || r.procs.Stale(rescuer):
		return fmt.Errorf("the rescuer cannot run now")
	case r.blocks(op):
		return fmt.Errorf("the rescue would wait on an open claim transaction")
	}
	return nil
}

// advanceRescueSplit is the split action while a rescue is split: first
// the end of any claim transaction its last part could wait on; then,
// drawn, the last part, or a step on an expired row the first part may
// have chosen.
func (r *run) advanceRescueSplit(t *rapid.T) {
	if r.endHolderOf(func(string) bool { return true }) {
		return
	}
	if rapid.Bool().Draw(t, "split_finish") {
		r.runSplitLast()
		return
	}
	cands := r.stepsOnExpiredRows()
	if len(cands) == 0 {
		r.runSplitLast()
		return
	}
	r.runOp(pick(t, "between", cands))
}

// stepsOnExpiredRows are the steps that change an expired INPROGRESS row
// the rescue has not locked: its current owner's complete, retry or renew,
// and a claim by any worker that may claim.
func (r *run) stepsOnExpiredRows() []model.Op {
	kinds := []model.Kind{model.Complete, model.Retry}
	if r.h.Inst.Proto.Has("renew") {
		kinds = append(kinds, model.Renew)
	}
	s := r.model()
	expired := false
	var cands []model.Op
	for _, c := range s.Claims {
		i := rowIndex(s, c.Event)
		if i < 0 || s.Rows[i].Status != model.InProgress || s.Rows[i].LeaseLive || s.Rows[i].LockedBy != "" {
			continue
		}
		expired = true
		if s.Rows[i].Gen != c.Gen || !r.running(c.Worker) || r.inTx(c.Worker) || r.busy(c.Worker) || !r.serverConnFree(c.Worker) {
			continue
		}
		for _, k := range kinds {
			if op := (model.Op{Kind: k, Worker: c.Worker, Event: c.Event, Gen: c.Gen, Claim: c.ID}); !r.blocks(op) {
				cands = append(cands, op)
			}
		}
	}
	if !expired {
		return nil
	}
	for _, w := range r.workersWhere(func(w string) bool { return r.running(w) && !r.inTx(w) && !r.busy(w) && r.serverConnFree(w) }) {
		cands = append(cands, model.Op{Kind: model.ClaimOp, Worker: w})
	}
	return cands
}

// isFixture reports whether kind is one of the harness's fixtures.
func isFixture(kind model.Kind) bool {
	return kind == model.Expire || kind == model.MakeDue || kind == model.Age
}
