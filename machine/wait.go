package machine

import (
	"errors"
	"fmt"
	"slices"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
	"pgregory.net/rapid"
)

// Waiting steps. A complete, retry or renew sent to a row that another
// worker's open claim transaction holds (a reclaim in Begin) may wait on
// that row lock, and so may a rescue while a reclaim holds an expired
// row. The machine lets it: the step's line says so
//
//	4. w1.Complete(e1, gen=1) -> waiting on w2
//
// and the machine goes on with other steps. When the holder commits, rolls
// back or is killed, the waiting statement finishes, and its outcome is
// judged against the model's state after the holder's step (the contract's
// rule: the row as it is when the wait ends), on a line of its own:
//
//	5. w2.Commit() -> ok
//	   then w1.Complete(e1, gen=1) -> applied   // model: rejected
//
// That is how a guard read from the statement's snapshot (a subquery, a
// CTE) shows: PostgreSQL re-checks only the target row's own predicate
// after the wait, and the stale outcome lands on the new claim, or the
// rescue returns the new owner's live claim to READY.
//
// At most one step waits at a time, no network fault is armed while one
// does and no server restart runs: the wait ends only by its holder's
// commit, rollback or kill, so the model knows exactly when.

// thenPrefix starts the line of a waiting step's end: not a numbered step
// (replaying the holder's step ends the wait again).
const thenPrefix = "then "

// thenLine is the prefix judge gets for a waiting step's end.
const thenLine = "     " + thenPrefix

// mayWaitNow reports whether a waiting step may be drawn or replayed now.
func (r *run) mayWaitNow() bool {
	return !r.h.Cfg.NoWaitingSteps && r.waiting == nil && r.split == nil && !r.faultPending && !r.draining
}

// waitsOn is the worker whose open transaction op would wait on, when op
// may be sent as a waiting step now: every model state must agree on it.
func (r *run) waitsOn(op model.Op) string {
	if !r.mayWaitNow() || r.procs.Stale(waiterOf(op)) {
		// A connection a fault broke answers with an error, not a wait.
		return ""
	}
	on := r.states[0].WaitsOn(op)
	for _, s := range r.states[1:] {
		if s.WaitsOn(op) != on {
			return ""
		}
	}
	if on != "" && r.behindExpiringReclaim(op, on) {
		return ""
	}
	return on
}

// race is the race action: the step that brings a waiting step's race
// closer, when there is one to take: the commit of the reclaim a step
// waits on; else a complete, retry or renew that would wait on a
// reclaim's open transaction, if one can; else the reclaim in an open
// transaction itself, when an expired row has a stale owner to wait
// on it; else the expiry of a committed claim whose owner could then
// wait; else the respawn of a killed worker, or the commit of an open
// claim transaction; else it skips. One action rather than two: an action that mostly
// skips makes rapid likelier to find no valid action in a step.
func (r *run) race(t *rapid.T) {
	if r.split != nil {
		t.Skip("a split is open: the split action steps its race")
	}
	if w := r.waitOn; r.waiting != nil {
		if !r.running(w) {
			// A paused holder: resumed first. (With the waiting worker
			// busy and the others paused or dead, this may be the only
			// step left, and an action that skips there leaves rapid
			// without a valid action.)
			r.exec(model.Op{Kind: model.Resume, Worker: w}, func() model.Outcome { return r.runSignal(w, model.Resume) })
			return
		}
		// The race's last step: the reclaim commits, and the step that
		// waited on it is judged against the new claim.
		r.exec(model.Op{Kind: model.Commit, Worker: w}, func() model.Outcome { return r.runEndTx(w, model.Commit) })
		return
	}
	if cands := r.waitingSteps(); len(cands) > 0 {
		r.runOp(pick(t, "waiting", cands))
		return
	}
	r.reclaimInTx(t)
}

// waitingSteps are the complete, retry, renew and rescue steps that
// would wait on another worker's open claim transaction now.
func (r *run) waitingSteps() []model.Op {
	kinds := []model.Kind{model.Complete, model.Retry}
	if r.h.Inst.Proto.Has("renew") {
		kinds = append(kinds, model.Renew)
	}
	// The owner of the row's last committed claim: its statement finds
	// the row INPROGRESS at its generation and so waits for the lock
	// (an older owner's is rejected at once, without waiting).
	s := r.model()
	var cands []model.Op
	if rescue := (model.Op{Kind: model.Rescue}); r.h.Inst.Proto.Has(sut.Rescue) && !r.busy(rescuer) && r.waitsOn(rescue) != "" {
		cands = append(cands, rescue)
	}
	for _, c := range s.Claims {
		i := rowIndex(s, c.Event)
		if i < 0 || s.Rows[i].Status != model.InProgress || s.Rows[i].Gen != c.Gen ||
			!r.running(c.Worker) || r.inTx(c.Worker) || r.busy(c.Worker) || !r.serverConnFree(c.Worker) {
			continue
		}
		for _, k := range kinds {
			if op := (model.Op{Kind: k, Worker: c.Worker, Event: c.Event, Gen: c.Gen, Claim: c.ID}); r.waitsOn(op) != "" {
				cands = append(cands, op)
			}
		}
	}
	return cands
}

// reclaimInTx is a Begin drawn only when a row has an expired lease and
// a stale claim of another running worker on it: the open reclaim a
// waiting step needs, which a Begin drawn at any time rarely makes.
// (Under fifo another row may come first: the Begin then takes that one.)
func (r *run) reclaimInTx(t *rapid.T) {
	s := r.model()
	owners := map[string]bool{}
	for _, c := range s.Claims {
		if i := rowIndex(s, c.Event); i >= 0 && s.Rows[i].Status == model.InProgress && s.Rows[i].Gen == c.Gen &&
			!s.Rows[i].LeaseLive && s.Rows[i].LockedBy == "" && r.running(c.Worker) {
			owners[c.Worker] = true
		}
	}
	reclaimers := r.workersWhere(func(w string) bool { return r.running(w) && !r.inTx(w) && !owners[w] && r.serverConnFree(w) })
	if len(owners) == 0 || len(reclaimers) == 0 {
		r.expireForRace(t)
		return
	}
	w := pick(t, "worker", reclaimers)
	r.exec(model.Op{Kind: model.Begin, Worker: w}, func() model.Outcome { return r.runClaim(model.Op{Kind: model.Begin, Worker: w}) })
}

// expireForRace expires the live lease of a committed claim whose owner
// runs, outside a transaction, and so could later wait on the reclaim: the
// race's first step after a claim; with none, respawnForRace.
func (r *run) expireForRace(t *rapid.T) {
	s := r.model()
	var cands []string
	for _, c := range s.Claims {
		if i := rowIndex(s, c.Event); i >= 0 && s.Rows[i].Status == model.InProgress && s.Rows[i].Gen == c.Gen &&
			s.Rows[i].LeaseLive && s.Rows[i].LockedBy == "" && r.running(c.Worker) && !r.inTx(c.Worker) &&
			!slices.Contains(cands, c.Event) {
			cands = append(cands, c.Event)
		}
	}
	if len(cands) == 0 {
		r.respawnForRace(t)
		return
	}
	e := pick(t, "event", cands)
	if r.expiringReclaim(t, e) {
		return
	}
	r.exec(model.Op{Kind: model.Expire, Event: e}, func() model.Outcome { return r.runFixture(model.Expire, e) })
}

// respawnForRace brings a killed worker back, the owner or the reclaimer
// of a race to come, when the race has nothing else to do. It keeps the
// action from skipping where few steps are left (every worker killed or
// busy but one in a transaction): rapid gives up on a step after 100
// skipped draws, and an action that skips there brings that closer.
func (r *run) respawnForRace(t *rapid.T) {
	if dead := r.workersWhere(func(w string) bool { return r.dead[w] }); len(dead) > 0 {
		w := pick(t, "worker", dead)
		r.exec(model.Op{Kind: model.Respawn, Worker: w}, func() model.Outcome { return r.runSignal(w, model.Respawn) })
		return
	}
	// Nobody to bring back: end an open claim transaction, so that its
	// worker can claim again.
	w := pick(t, "worker", r.workersWhere(func(w string) bool { return r.running(w) && r.inTx(w) }))
	r.exec(model.Op{Kind: model.Commit, Worker: w}, func() model.Outcome { return r.runEndTx(w, model.Commit) })
}

// busy reports whether w (a worker, or the rescuer) has a waiting
// statement outstanding: it can take no other step until the wait ends.
func (r *run) busy(w string) bool {
	return r.waiting != nil && waiterOf(*r.waiting) == w || r.split != nil && r.split.Holder() == w
}

// rescueWaits reports whether the waiting step is a rescue. No claim
// transaction opens then: a rescue of several statements takes a new
// snapshot for each, and one after the wait could meet the lock of a
// reclaim opened meanwhile and wait a second time, which the machine does
// not follow (a single holder ends every wait).
func (r *run) rescueWaits() bool {
	return r.waiting != nil && r.waiting.Kind == model.Rescue
}

// waiterOf is the process whose connection runs op: its worker's, or for
// a rescue the rescuer's.
func waiterOf(op model.Op) string {
	if op.Kind == model.Rescue {
		return rescuer
	}
	return op.Worker
}

// waitRequest is what a waiting step sends: a complete's, retry's or
// renew's request, or the rescue.
func (r *run) waitRequest(op model.Op) worker.Request {
	if op.Kind == model.Rescue {
		return rescueRequest
	}
	return r.outcomeRequest(op)
}

// waitOutcome is a waiting step's answer in the model's terms.
func (r *run) waitOutcome(op model.Op, resp worker.Response, unknown bool) model.Outcome {
	if op.Kind != model.Rescue {
		return r.outcomeOf(resp, unknown)
	}
	return okOrUnknown(unknown)
}

// endsWait reports whether op ends the transaction the waiting step waits on.
func (r *run) endsWait(op model.Op) bool {
	if r.waiting == nil || op.Worker != r.waitOn {
		return false
	}
	return op.Kind == model.Commit || op.Kind == model.Rollback || op.Kind == model.Kill
}

// startWait sends op; if it answers at once it is an ordinary step (the
// model allows only rejected: it cannot have touched the locked row),
// otherwise it is left waiting on on.
func (r *run) startWait(op model.Op, on string) model.Outcome {
	// The server is asked whether the worker's backend waits: it must be
	// connected already (a fault's broken connection is made afresh).
	w := waiterOf(op)
	if err := r.h.connected(w); err != nil {
		r.t.Fatalf("harness: %s before %v: %v", w, op, err)
	}
	p := r.h.pool.Get(w)
	req := r.waitRequest(op)
	var resp worker.Response
	var err error
	r.h.timed(func() { resp, err = p.StartWatched(req, lockProbeInterval, r.h.waitsOnLock) })
	r.h.pool.Used(w)
	if errors.Is(err, worker.ErrBlocked) {
		r.waiting, r.waitOn = &op, on
		r.h.waiter = w
		out := model.Outcome{Kind: model.Waiting, On: on}
		r.traceOutcome(out, nil)
		r.log(fmt.Sprintf("%3d. %s", r.stepNumber(), r.shownStep(op, out)))
		r.recordStep(r.shownOp(op), r.shownOutcome(out), "")
		r.countCoverage(op, out)
		return out
	}
	resp, unknown := r.answer(w, op, resp, err, false)
	got := r.waitOutcome(op, resp, unknown)
	next, got := r.judge(op, got, fmt.Sprintf("%3d. ", r.stepNumber()))
	r.observe(op, got, next...)
	return got
}

// finishWait runs after the holder's step, whose possible states are
// next: the waiting statement's answer is read and judged from them, and
// the rows are read once, after both.
func (r *run) finishWait(holderOp model.Op, next []model.State) {
	op := *r.waiting
	r.traceStates(next, nil) // the holder's step, in the report: the model after it
	for _, s := range next {
		r.waitEnded = append(r.waitEnded, r.rowsAfter(holderOp, s))
	}
	r.waiting, r.waitOn, r.h.waiter = nil, "", ""
	r.states = next
	r.recordPoint(model.Outcome{Kind: model.OK}) // the holder's commit, before the waiter's
	defer r.traceBegin(op)()                     // the report shows the wait's end as a step of its own
	var resp worker.Response
	var err error
	r.h.timed(func() { resp, err = r.h.pool.Get(waiterOf(op)).AwaitWaiting() })
	resp, unknown := r.answer(waiterOf(op), op, resp, err, false)
	got := r.waitOutcome(op, resp, unknown)
	next, got = r.judge(op, got, thenLine)
	r.observe(op, got, next...)
}

// rowsAfter is what the harness would have read after the holder's step,
// had the waiting statement not run at once: the rows as last read, but
// those the holder's commit made visible (the rows its claim took or
// buried), as the model state next has them after it. A rollback or kill
// changes no committed row.
func (r *run) rowsAfter(holderOp model.Op, next model.State) []model.RowView {
	before := viewsOf(r.rows)
	if holderOp.Kind != model.Commit {
		return before
	}
	changed := map[string]bool{}
	for _, p := range r.model().Pending {
		if p.Worker != holderOp.Worker {
			continue
		}
		changed[p.Event] = p.Event != ""
		for _, g := range p.More {
			changed[g.Event] = true
		}
		for _, e := range p.Bury {
			changed[e] = true
		}
		if p.Expire != "" {
			changed[p.Expire] = true
		}
	}
	after := map[string]model.RowView{}
	for _, v := range next.View(r.hasGen()) {
		after[v.Event] = v
	}
	for i, v := range before {
		if a, ok := after[v.Event]; ok && changed[v.Event] {
			before[i] = a
		}
	}
	return before
}

// outcomeOf is a complete's, retry's or renew's answer in the model's terms.
func (r *run) outcomeOf(resp worker.Response, unknown bool) model.Outcome {
	switch {
	case unknown:
		return model.Outcome{Kind: model.Unknown}
	case resp.Applied:
		return model.Outcome{Kind: model.Applied}
	}
	return model.Outcome{Kind: model.Rejected}
}
