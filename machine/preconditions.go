package machine

import (
	"errors"
	"fmt"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
)

// Each action's precondition on the run, in one place for both of its
// users: the draw (actions.go) picks among the ops for which it holds, and
// a replay (replay.go) refuses, or skips, a recorded op for which it does
// not. Written twice, the two drifted: a replay would send a step to a
// worker whose earlier step still waited, which no check ever draws. Each
// returns nil when op may run now, else why not.
//
// What stays a draw's alone is the draw's choice, not whether a step can
// run: which of a worker's claims is stale (outcome), the Age of a lease
// the clock has aged already (ageLeavesTime), the claims a split's race
// runs as its own steps.

// processes is what a precondition reads of the worker processes
// (worker.Pool): which one a pause stopped, and which has a connection a
// server restart broke while it was paused (it answers its next statement
// with an error, so no step that needs an answer is sent to it).
type processes interface {
	Paused(name string) bool
	Stale(name string) bool
}

var errBusy = errors.New("its step waits on another worker's open transaction (wait.go)")

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

// mayStop: a pause or a kill keeps another worker running, so that some
// action is always possible and rapid does not give up on a program where
// every worker is stopped.
func (r *run) mayStop(op model.Op) error {
	w := op.Worker
	switch {
	case r.busy(w):
		return fmt.Errorf("%s: %w", w, errBusy)
	case !r.alive(w) || op.Kind == model.Pause && !r.running(w):
		return fmt.Errorf("%s is not running", w)
	case !r.othersRunning(w):
		return fmt.Errorf("no worker but %s is running", w)
	}
	return nil
}

// mayResume: a resume needs a paused worker.
func (r *run) mayResume(w string) error {
	switch {
	case r.busy(w):
		return fmt.Errorf("%s: %w", w, errBusy)
	case !r.alive(w) || r.running(w):
		return fmt.Errorf("%s is not paused", w)
	}
	return nil
}

// mayRespawn: a respawn needs a killed worker.
func (r *run) mayRespawn(w string) error {
	switch {
	case r.busy(w):
		return fmt.Errorf("%s: %w", w, errBusy)
	case r.alive(w):
		return fmt.Errorf("%s is alive", w)
	}
	return nil
}

// mayEndSession: ending a session needs lease=session and a running
// worker outside a transaction whose session holds a lease.
func (r *run) mayEndSession(w string) error {
	switch {
	case !r.sessionLeases():
		return fmt.Errorf("lease=session only")
	case r.busy(w):
		return fmt.Errorf("%s: %w", w, errBusy)
	case !r.running(w) || r.inTx(w):
		return fmt.Errorf("%s is not running outside a transaction", w)
	case !r.holdsSession(w):
		return fmt.Errorf("%s's session holds no lease", w)
	}
	return nil
}

// mayFixture: an expire, age or due fixture needs its row in a state it
// applies to (fixtureApplies), unlocked by an open transaction; no
// fixture while a split rescue's read has chosen its rows.
func (r *run) mayFixture(op model.Op) error {
	if op.Kind == model.Age && !r.h.Inst.Proto.Has(sut.Age) {
		return fmt.Errorf("the protocol has no age section")
	}
	if r.split != nil && r.split.Kind == model.Rescue {
		return fmt.Errorf("a rescue is split: its read chose its rows (split_rescue.go)")
	}
	s := r.model()
	i := rowIndex(s, op.Event)
	switch {
	case i < 0:
		return fmt.Errorf("no row %s to change", op.Event)
	case r.blocks(op):
		return fmt.Errorf("%s is locked by an open transaction", op.Event)
	case !fixtureApplies(op.Kind, s.Rows[i]):
		return fmt.Errorf("%s is not in a state the fixture applies to", op.Event)
	}
	return nil
}

// mayRescue: the rescuer's pass needs a rescue section, the rescuer free,
// no split open (a rescue may lock rows of other tables, a worker's
// heartbeat, that the split's first part holds: the probe knows only the
// events'), and a lock on a row only as a waiting step.
func (r *run) mayRescue() error {
	op := model.Op{Kind: model.Rescue}
	switch {
	case !r.h.Inst.Proto.Has(sut.Rescue):
		return fmt.Errorf("the protocol has no rescue section")
	case r.split != nil:
		return fmt.Errorf("a split is open")
	case r.busy(rescuer) || r.blocks(op) && r.waitsOn(op) == "":
		return fmt.Errorf("the rescue would wait on an open claim transaction")
	}
	return nil
}

// mayEnqueue: an enqueue adds the next event, up to the configured
// number.
func (r *run) mayEnqueue(op model.Op) error {
	if op.Event != EventName(r.nextEvent) || r.nextEvent >= r.h.Cfg.MaxEvents {
		return fmt.Errorf("the next event is %s, at most %d", EventName(r.nextEvent), r.h.Cfg.MaxEvents)
	}
	return nil
}

// mayServerFault: a restart, crash or failover needs a server the harness
// owns whose fault it is, no step waiting and no split open. What each does
// is the same every time (open transactions lost, running workers
// reconnected, paused ones left with a broken connection; a rewind to the
// durable point), so it replays.
func (r *run) mayServerFault(op model.Op) error {
	want := map[model.Kind]pgserver.Fault{model.Restart: pgserver.FaultRestart, model.Crash: pgserver.FaultCrash, model.Failover: pgserver.FaultFailover}[op.Kind]
	switch {
	case r.h.Faults == nil || r.h.Faults.ServerFault() == pgserver.FaultNone:
		return fmt.Errorf("the harness injects no server fault")
	case r.h.Faults.ServerFault() != want:
		return fmt.Errorf("this server's fault is %s, not a %s", r.h.Faults.ServerFault(), op.Kind)
	case r.waiting != nil || r.split != nil:
		return fmt.Errorf("a step waits or a split is open: no %s until it ends", op.Kind)
	}
	return nil
}

// mayDurable: a Flush() or Stall() needs a server that may rewind, whose
// durable point that step moves (durableOp), no step waiting and no split
// open.
func (r *run) mayDurable(op model.Op) error {
	if d, ok := r.durableOp(); !ok || d.Kind != op.Kind || r.waiting != nil || r.split != nil {
		return fmt.Errorf("no %s step on this server now", op.Kind)
	}
	return nil
}
