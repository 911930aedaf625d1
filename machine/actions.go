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
