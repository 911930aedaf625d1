package model

import (
	"fmt"
	"slices"
	"strings"
)

// Step returns every outcome the policy allows for op, each with the state
// after it. A claim in order=any has one transition per eligible row; every
// other step has exactly one. No transitions means op's precondition does
// not hold (see Precondition): the caller must not run it.
func (s State) Step(op Op) []Transition {
	if s.Precondition(op) != nil {
		return nil
	}
	if op.Part.Of > 0 {
		return s.stepPart(op)
	}
	switch op.Kind {
	case Enqueue:
		next := s.clone()
		next.Rows = append(next.Rows, Row{Event: op.Event, Status: Ready, Due: true})
		return one(OK, next)
	case ClaimOp:
		return s.claim(op.Worker, false)
	case Begin:
		if op.Event != "" {
			return s.beginExpiring(op.Worker, op.Event)
		}
		return s.claim(op.Worker, true)
	case Commit:
		next := s.commit(op.Worker)
		if !s.Policy.relaxed(OneLiveOwner) {
			return one(OK, next)
		}
		short := next.clone()
		for _, g := range s.Pending[s.pending(op.Worker)].grants() {
			short.Rows[short.row(g.Event)].LeaseLive = false
		}
		return []Transition{{Out: Outcome{Kind: OK}, Next: next}, {Out: Outcome{Kind: OK}, Next: short}}
	case Rollback:
		return one(OK, s.rollback(op.Worker))
	case Kill, EndSession:
		return one(OK, s.rollback(op.Worker).sessionEnded(op.Worker))
	case Restart, Crash, Failover:
		// Every connection dies with the server. What a Crash or Failover
		// also loses is the machine's to apply (RewoundTo), from the states
		// it kept since the last durable point.
		return one(OK, s.rolledBack().everySessionEnded())
	case Flush, Stall:
		return one(OK, s.clone())
	case Complete, Retry, Renew:
		if s.Blocks(op) {
			// It answered without waiting, so it cannot have changed the
			// row another transaction holds: rejected, or an outcome the
			// policy allows that leaves the row as it is (a renew that
			// only touches a heartbeat elsewhere, under a relaxed
			// property). Its outcome after a wait is judged when the wait
			// ends, by Step from the state then (see WaitsOn).
			return s.unchangedUpdates(op)
		}
		return s.update(op)
	case Expire, MakeDue:
		return one(OK, s.fixture(op))
	case Rescue:
		return s.rescue()
	case Age:
		return s.age(op.Event)
	case Pause, Resume, Respawn:
		return one(OK, s.clone())
	}
	return nil
}

// Precondition returns why op cannot run from s, or nil. Step and Ambiguous
// return nothing for such an op:
//   - an op lacks the worker or event its kind needs, or its kind is unknown;
//   - Enqueue of an event already enqueued (event ids are unique);
//   - Claim, Begin, Complete, Retry or Renew by a worker with an open claim
//     transaction: on its connection they would run inside that
//     transaction, which the model does not follow. Such a worker may only
//     Commit, Rollback, Pause, Resume, be killed, or lose it to Restart;
//   - Commit or Rollback by a worker without one;
//   - a fixture that Blocks: it would wait for another transaction's
//     lock on the harness's own connection. (A complete, retry, renew or
//     rescue that Blocks may run: the caller either sees it answer at once
//     or waits for the lock's holder to end, see WaitsOn.)
func (s State) Precondition(op Op) error {
	needs, ok := shapes[op.Kind]
	switch {
	case !ok:
		return fmt.Errorf("unknown op kind %q", op.Kind)
	case needs.worker && op.Worker == "":
		return fmt.Errorf("%s needs a worker", op.Kind)
	case needs.event && op.Event == "":
		return fmt.Errorf("%s needs an event", op.Kind)
	}
	open := s.pending(op.Worker) >= 0
	switch op.Kind {
	case Enqueue:
		// A completed event deleted under done=delete still has its claims.
		if s.row(op.Event) >= 0 || slices.ContainsFunc(s.Claims, func(c Claim) bool { return c.Event == op.Event }) {
			return fmt.Errorf("%s is already enqueued", op.Event)
		}
	case ClaimOp, Begin, Complete, Retry, Renew:
		if open {
			return fmt.Errorf("%s has an open claim transaction", op.Worker)
		}
	case Commit, Rollback:
		if !open {
			return fmt.Errorf("%s has no open claim transaction", op.Worker)
		}
	}
	if op.Kind == Begin && op.Event != "" {
		if err := s.CanExpireInTx(op.Event); err != nil {
			return err
		}
	}
	if op.Part.Of > 0 && !op.Splittable() {
		return fmt.Errorf("a %s step cannot be split", op.Kind)
	}
	if s.Blocks(op) && !s.mayWait(op) {
		if op.Kind == Rescue {
			// A rescue has no row of its own: it meets every holder of an
			// expired row (a split rescue's last part, replayed there, once
			// indexed the rows by its empty event and panicked).
			return fmt.Errorf("%s waits for the open transactions of %s", op, strings.Join(s.rescueHolders(), ", "))
		}
		return fmt.Errorf("%s waits for %s's open transaction", op, s.Rows[s.row(op.Event)].LockedBy)
	}
	return nil
}

// mayWait reports whether op may be sent although it Blocks: a complete,
// retry or renew goes to its worker's own connection, a rescue to the
// rescuer's, either of which may wait.
func (s State) mayWait(op Op) bool {
	if op.Part.Of > 0 {
		return false // a split part is sent only to a row nobody else holds
	}
	return op.Kind == Complete || op.Kind == Retry || op.Kind == Renew || op.Kind == Rescue
}

// WaitsOn is the worker whose open claim transaction holds the row op's
// statement may wait on, or "" when op cannot wait. A waiting step's
// outcome is decided when that transaction ends: the caller then judges it
// with Step from the state after the holder's commit, rollback or kill,
// which is the contract's rule (the row as it is when the wait ends).
//
// A rescue may wait on every open transaction that holds an expired row;
// it names one only when a single worker's does, since the order in which
// it would meet several is the server's plan, which the model does not
// know. A caller must not send a rescue that Blocks with no name here.
func (s State) WaitsOn(op Op) string {
	if !s.mayWait(op) || !s.Blocks(op) {
		return ""
	}
	if op.Kind == Rescue {
		return s.rescueHolder()
	}
	return s.Rows[s.row(op.Event)].LockedBy
}

// Blocks reports whether op's UPDATE may wait for the row lock of another
// worker's open claim transaction: complete, retry, renew and the fixtures
// on a row locked by a transaction that is not their own. Claims never
// block (SKIP LOCKED). A strict protocol's guarded update finds a locked
// row already ineligible (its lease expired) and returns without waiting;
// a lenient one's waits, and is judged when the holder ends. A fixture or
// rescue that may block is skipped (it runs on the harness's connection).
func (s State) Blocks(op Op) bool {
	own := ""
	switch op.Kind {
	case Complete, Retry, Renew:
		own = op.Worker
	case Expire, MakeDue, Age:
		// Fixtures run on the suite's own connection, whoever op names.
	case Rescue:
		return s.rescueBlocks()
	default:
		return false
	}
	i := s.row(op.Event)
	if i < 0 {
		return false
	}
	lock := s.Rows[i].LockedBy
	return lock != "" && lock != own
}

func one(kind OutcomeKind, next State) []Transition {
	return []Transition{{Out: Outcome{Kind: kind}, Next: next}}
}

// fixture is Expire or MakeDue: it changes only a row in the state it targets.
func (s State) fixture(op Op) State {
	next := s.clone()
	i := next.row(op.Event)
	if i < 0 {
		return next
	}
	r := &next.Rows[i]
	switch {
	case op.Kind == Expire && r.Status == InProgress:
		r.LeaseLive, r.Aged = false, false
	case op.Kind == MakeDue && r.Status == Ready:
		r.Due = true
	case op.Kind == MakeDue && r.Rescheduled:
		r.Rescheduled = false
	}
	return next
}

// age moves a live lease's deadline back by 60% of the declared lease. A
// lease granted for at least the declared length outlives the first Age
// (40% of it is left); after the second (120% gone) it has expired, unless
// it was granted for longer than the declared length, which the policy
// allows ("at least"): both are possible then. Any other row is unchanged.
func (s State) age(event string) []Transition {
	next := s.clone()
	i := next.row(event)
	if i < 0 || next.Rows[i].Status != InProgress || !next.Rows[i].LeaseLive {
		return one(OK, next)
	}
	r := &next.Rows[i]
	if !r.Aged && !s.Policy.relaxed(OneLiveOwner) {
		r.Aged = true
		return one(OK, next)
	}
	r.Aged = true
	expired := next.clone()
	er := &expired.Rows[i]
	er.LeaseLive, er.Aged, er.Renewed = false, false, false
	return []Transition{{Out: Outcome{Kind: OK}, Next: expired}, {Out: Outcome{Kind: OK}, Next: next}}
}

// unchangedUpdates are the outcomes update allows for op that leave op's
// row as it is, and rejected.
func (s State) unchangedUpdates(op Op) []Transition {
	out := one(Rejected, s.clone())
	i := s.row(op.Event)
	for _, tr := range s.update(op) {
		if tr.Out.Kind == Rejected || i < 0 {
			continue
		}
		if j := tr.Next.row(op.Event); j >= 0 && tr.Next.Rows[j] == s.Rows[i] {
			out = append(out, tr)
		}
	}
	return out
}
