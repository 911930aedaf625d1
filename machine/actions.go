package machine

import (
	"fmt"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
	"pgregory.net/rapid"
)

// actions is the rapid action table: each action picks its arguments among
// the valid ones (skipping before any draw when there are none) and runs
// one step. The "" entry is rapid's per-step invariant hook; the checks run
// inside every step already, so it only guards the model's own sanity.
func (r *run) actions() map[string]func(*rapid.T) {
	all := map[string]func(*rapid.T){
		ActEnqueue:       r.enqueue,
		ActClaim:         func(t *rapid.T) { r.claim(t, model.ClaimOp) },
		ActBegin:         func(t *rapid.T) { r.claim(t, model.Begin) },
		ActCommit:        func(t *rapid.T) { r.endTx(t, model.Commit) },
		ActRollback:      func(t *rapid.T) { r.endTx(t, model.Rollback) },
		ActComplete:      func(t *rapid.T) { r.outcome(t, model.Complete, false) },
		ActRetry:         func(t *rapid.T) { r.outcome(t, model.Retry, false) },
		ActRenew:         func(t *rapid.T) { r.outcome(t, model.Renew, false) },
		ActStaleComplete: func(t *rapid.T) { r.outcome(t, model.Complete, true) },
		ActStaleRetry:    func(t *rapid.T) { r.outcome(t, model.Retry, true) },
		ActStaleRenew:    func(t *rapid.T) { r.outcome(t, model.Renew, true) },
		ActPause:         r.pause,
		ActResume:        r.resume,
		ActKill:          r.killAction,
		ActRespawn:       r.respawn,
		ActEndSession:    r.endSessionAction,
		ActExpire:        func(t *rapid.T) { r.fixture(t, model.Expire) },
		ActMakeDue:       func(t *rapid.T) { r.fixture(t, model.MakeDue) },
		ActAge:           func(t *rapid.T) { r.fixture(t, model.Age) },
		ActRequestLost:   func(t *rapid.T) { r.networkFault(t, false) },
		ActReplyLost:     func(t *rapid.T) { r.networkFault(t, true) },
		ActDBRestart:     r.dbRestart,
		ActDBDurable:     r.dbDurable,
		ActReissued:      r.reissued,
		ActRescue:        r.rescue,
		ActRace:          r.race,
		ActSplit:         r.splitAction,
	}
	hasRenew := r.h.Inst.Proto.Has("renew")
	out := map[string]func(*rapid.T){"": func(*rapid.T) {}}
	for name, act := range all {
		if !r.h.Cfg.enabled(name) {
			continue
		}
		if name == ActRace && r.h.Cfg.NoWaitingSteps {
			continue
		}
		if !hasRenew && (name == ActRenew || name == ActStaleRenew) {
			continue
		}
		if name == ActAge && !r.h.Inst.Proto.Has(sut.Age) {
			continue // no age section: lease length is not exercised
		}
		if r.sessionLeases() && notUnderSession[name] || !r.sessionLeases() && sessionOnly[name] {
			// Under lease=session a session's end is what ends a lease
			// (session.go): no fixture expires or ages one, and no claim
			// runs in a transaction, whose rollback would leave its
			// session lock held. Elsewhere there is no session to end.
			continue
		}
		if name == ActSplit && (r.h.Cfg.NoSplitSteps || !r.splits()) {
			continue // every outcome section is one statement: nothing to split
		}
		if name == ActRescue && !r.h.Inst.Proto.Has(sut.Rescue) {
			continue
		}
		if !r.h.Inst.Proto.Has(sut.Tx) && (name == ActBegin || name == ActRace) {
			continue // a worker executable without the tx feature claims in autocommit only
		}
		if name == ActDBRestart && (r.h.Faults == nil || r.h.Faults.ServerFault() == pgserver.FaultNone) {
			continue
		}
		if _, ok := r.durableOp(); (name == ActDBDurable || name == ActReissued) && !ok {
			continue // a server that never rewinds: nothing to make durable, no claim lost
		}
		if (name == ActRequestLost || name == ActReplyLost) && r.h.Faults == nil {
			continue
		}
		// rapid draws an action name uniformly: an action of weight w is
		// entered under w names ("claim", "claim#2", ...).
		out[name] = act
		for k := 2; k <= r.h.Cfg.weight(name); k++ {
			out[fmt.Sprintf("%s#%d", name, k)] = act
		}
	}
	return out
}

// Worker sets, from the process states and the model's open transactions.

// sessionOnly and notUnderSession are the actions only lease=session
// draws, and those it does not.
var (
	sessionOnly     = map[string]bool{ActEndSession: true}
	notUnderSession = map[string]bool{ActExpire: true, ActAge: true, ActBegin: true, ActSplit: true, ActRace: true, ActReissued: true}
)

func (r *run) alive(w string) bool   { return !r.dead[w] }
func (r *run) running(w string) bool { return !r.dead[w] && !r.procs.Paused(w) }

func (r *run) inTx(w string) bool {
	for _, p := range r.model().Pending {
		if p.Worker == w {
			return true
		}
	}
	return false
}

// workersWhere lists the workers for which ok holds, but never one whose
// step waits (see wait.go): it takes no other step until the wait ends.
func (r *run) workersWhere(ok func(string) bool) []string {
	var out []string
	for _, w := range r.workers {
		if ok(w) && !r.busy(w) {
			out = append(out, w)
		}
	}
	return out
}

func pick[T any](t *rapid.T, label string, from []T) T {
	if len(from) == 0 {
		t.Skip("nothing to choose")
	}
	return rapid.SampledFrom(from).Draw(t, label)
}

func (r *run) enqueue(t *rapid.T) {
	op := model.Op{Kind: model.Enqueue, Event: EventName(r.nextEvent)}
	if err := r.mayEnqueue(op); err != nil {
		t.Skip(err.Error())
	}
	r.runOp(op)
}

func (r *run) claim(t *rapid.T, kind model.Kind) {
	if r.split != nil && r.split.Kind == model.ClaimOp && kind == model.ClaimOp {
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

func (r *run) blocks(op model.Op) bool {
	for _, s := range r.states {
		if s.Blocks(op) || s.Precondition(op) != nil {
			return true
		}
	}
	return false
}

// othersRunning reports whether a worker other than w is running: pause
// and kill keep one, so that some action is always possible and rapid does
// not give up on a program where every worker is stopped.
func (r *run) othersRunning(w string) bool {
	for _, o := range r.workers {
		if o != w && r.running(o) {
			return true
		}
	}
	return false
}

func (r *run) pause(t *rapid.T) {
	w := pick(t, "worker", r.workersWhere(func(w string) bool { return r.mayStop(model.Op{Kind: model.Pause, Worker: w}) == nil }))
	r.runOp(model.Op{Kind: model.Pause, Worker: w})
}

func (r *run) resume(t *rapid.T) {
	w := pick(t, "worker", r.workersWhere(func(w string) bool { return r.mayResume(w) == nil }))
	r.runOp(model.Op{Kind: model.Resume, Worker: w})
}

func (r *run) killAction(t *rapid.T) {
	w := pick(t, "worker", r.workersWhere(func(w string) bool { return r.mayStop(model.Op{Kind: model.Kill, Worker: w}) == nil }))
	r.runOp(model.Op{Kind: model.Kill, Worker: w})
}

func (r *run) respawn(t *rapid.T) {
	w := pick(t, "worker", r.workersWhere(func(w string) bool { return r.mayRespawn(w) == nil }))
	r.runOp(model.Op{Kind: model.Respawn, Worker: w})
}

// fixture expires or ages a live lease or makes a waiting row due, on the
// harness's own connection, as the article's tests do.
func (r *run) fixture(t *rapid.T, kind model.Kind) {
	var cands []string
	for _, row := range r.model().Rows {
		if r.mayFixture(model.Op{Kind: kind, Event: row.Event}) == nil && (kind != model.Age || r.ageLeavesTime(row.Event)) {
			cands = append(cands, row.Event)
		}
	}
	e := pick(t, "event", cands)
	r.runOp(model.Op{Kind: kind, Event: e})
}

// fixtureApplies reports whether a fixture of kind has something to do on
// row: a live lease to expire or age, a waiting row to make due.
func fixtureApplies(kind model.Kind, row model.Row) bool {
	switch kind {
	case model.Expire, model.Age:
		return row.Status == model.InProgress && row.LeaseLive
	case model.MakeDue:
		return row.Status == model.Ready && !row.Due
	}
	return false
}

// rescue runs the rescuer's maintenance pass. One that could wait on an
// open claim transaction's row lock runs as a waiting step (wait.go) when
// it may, else not at all.
func (r *run) rescue(t *rapid.T) {
	if err := r.mayRescue(); err != nil {
		t.Skip(err.Error())
	}
	r.runOp(model.Op{Kind: model.Rescue})
}
