package machine

import (
	"fmt"

	"github.com/outboxlab/outboxlab/model"
	"pgregory.net/rapid"
)

// The expiring reclaim, w2.Begin(expire e1) (model/expiring.go): instead
// of expiring e1's live lease on the harness's connection, the race may
// have another worker open a claim transaction that expires it first and
// then claims. Until that worker commits, e1's owner still sees its lease
// live, so its complete, retry or renew passes its guard on the committed
// row and waits on the lock (a waiting step, wait.go); the commit then
// shows it the expiry and the reclaim together:
//
//	3. w2.Begin(expire e1) -> claimed e1 gen=2
//	4. w1.Complete(e1, gen=1) -> waiting on w2
//	5. w2.Commit() -> ok
//	   then w1.Complete(e1, gen=1) -> applied   // model: rejected
//
// That is a statement's re-check after a lock wait meeting a reclaim that
// committed between the lock's release and the re-check, which a
// concurrent run reaches only by luck: a guard read from the statement's
// snapshot (testdata/mutants/race_strict_*) passes on the old claim's
// generation and the stale outcome lands on the new claim.

// expiringReclaim draws, for e's live lease, whether another running
// worker expires it in a claim transaction of its own, and runs it if so.
// It needs the expire fixture to be a plain update of e's row (the harness
// can then tell what the transaction's lock holds, as for splits). Under
// policy=lenient it is not drawn: a stale outcome there is not refused
// for its lease, and after a committed expiry the race's reclaim in an
// open transaction already makes it wait (wait.go); drawn there too, it
// only gave the shrinker a second road to the same race, and longer
// counterexamples (7 steps for race_retry_*, where 5 do).
func (r *run) expiringReclaim(t *rapid.T, e string) bool {
	if !r.h.Inst.ProbesRows() || r.rescueWaits() || r.model().Policy.Lenient || !r.mayExpireInTx(e) {
		return false
	}
	owner := r.ownerOf(e)
	reclaimers := r.workersWhere(func(w string) bool { return w != owner && r.running(w) && !r.inTx(w) && r.serverConnFree(w) })
	if len(reclaimers) == 0 || !rapid.Bool().Draw(t, "expire in a reclaim") {
		return false
	}
	op := model.Op{Kind: model.Begin, Worker: pick(t, "worker", reclaimers), Event: e}
	r.exec(op, func() model.Outcome { return r.runClaim(op) })
	return true
}

// behindExpiringReclaim reports whether op, a section of several
// statements, would wait on holder's Begin(expire e) of op's row: it is
// not sent then. The window between its statements is the split action's
// to show (split.go), as a split step; the expiring reclaim is for the one
// inside a single statement, and a counterexample through it would hide
// which of the two the protocol lost.
func (r *run) behindExpiringReclaim(op model.Op, holder string) bool {
	if op.Kind == model.Rescue || r.h.Inst.Driver().StatementCount(sectionOf(op.Kind)) < 2 {
		return false
	}
	for _, s := range r.states {
		for _, p := range s.Pending {
			if p.Worker == holder && p.Expire == op.Event {
				return true
			}
		}
	}
	return false
}

// mayExpireInTx reports whether every model state lets Begin(expire e) run.
func (r *run) mayExpireInTx(e string) bool {
	for _, s := range r.states {
		if s.CanExpireInTx(e) != nil {
			return false
		}
	}
	return true
}

// ownerOf is the worker of e's last claim, or "".
func (r *run) ownerOf(e string) string {
	s := r.model()
	for i := len(s.Claims) - 1; i >= 0; i-- {
		if s.Claims[i].Event == e {
			return s.Claims[i].Worker
		}
	}
	return ""
}

// canReplayExpiring holds a replayed Begin(expire e) to what
// expiringReclaim requires.
func (r *run) canReplayExpiring(op model.Op) error {
	if op.Kind != model.Begin || op.Event == "" {
		return nil
	}
	if !r.h.Inst.ProbesRows() {
		return fmt.Errorf("the protocol's expire fixture is not a plain update of the row")
	}
	if !r.mayExpireInTx(op.Event) {
		return fmt.Errorf("%s's lease is not live and free", op.Event)
	}
	return nil
}
