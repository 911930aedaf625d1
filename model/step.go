package model

import (
	"cmp"
	"fmt"
	"slices"
)

// Step returns every outcome the policy allows for op, each with the state
// after it. A claim in order=any has one transition per eligible row; every
// other step has exactly one. No transitions means op's precondition does
// not hold (see Precondition): the caller must not run it.
func (s State) Step(op Op) []Transition {
	if s.Precondition(op) != nil {
		return nil
	}
	switch op.Kind {
	case Enqueue:
		next := s.clone()
		next.Rows = append(next.Rows, Row{Event: op.Event, Status: Ready, Due: true})
		return one(OK, next)
	case ClaimOp:
		return s.claim(op.Worker, false)
	case Begin:
		return s.claim(op.Worker, true)
	case Commit:
		return one(OK, s.commit(op.Worker))
	case Rollback, Kill:
		return one(OK, s.rollback(op.Worker))
	case Restart:
		next := s
		for _, p := range s.Pending {
			next = next.rollback(p.Worker)
		}
		return one(OK, next.clone())
	case Complete, Retry, Renew:
		return s.update(op)
	case Expire, MakeDue:
		return one(OK, s.fixture(op))
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
//   - an op that Blocks: it would wait for another transaction's lock.
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
		if s.row(op.Event) >= 0 {
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
	if s.Blocks(op) {
		return fmt.Errorf("%s waits for %s's open transaction", op, s.Rows[s.row(op.Event)].LockedBy)
	}
	return nil
}

// Blocks reports whether op's UPDATE may wait for the row lock of another
// worker's open claim transaction: complete, retry, renew and the fixtures
// on a row locked by a transaction that is not their own. Claims never
// block (SKIP LOCKED). A correct protocol's guarded update finds a locked
// row already ineligible and returns without waiting, but a faulty one may
// hang, so the caller skips every op that may block.
func (s State) Blocks(op Op) bool {
	own := ""
	switch op.Kind {
	case Complete, Retry, Renew:
		own = op.Worker
	case Expire, MakeDue, Age:
		// Fixtures run on the suite's own connection, whoever op names.
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

// take is the claim statement's write: the row is owned, under a new
// generation, with a live lease.
func take(r *Row) {
	r.Status = InProgress
	r.Gen++
	r.LeaseLive = true
	r.Aged, r.Renewed = false, false
	r.Due = false
	r.LockedBy = ""
}

// claim is an autocommit claim, or with inTx the claim inside a
// transaction that Begin opens: the row is locked but its committed fields
// change only at Commit.
func (s State) claim(worker string, inTx bool) []Transition {
	rows := s.eligibleRows()
	if len(rows) == 0 {
		next := s.clone()
		if inTx {
			next.Pending = withPending(next.Pending, PendingClaim{Worker: worker})
		}
		return one(Empty, next)
	}
	if s.Order != Any {
		rows = rows[:1]
	}
	var out []Transition
	for _, i := range rows {
		next := s.clone()
		r := &next.Rows[i]
		c := Claim{Worker: worker, Event: r.Event, Gen: r.Gen + 1}
		if inTx {
			r.LockedBy = worker
			next.Pending = withPending(next.Pending, PendingClaim(c))
		} else {
			take(r)
			next.Claims = append(next.Claims, c)
		}
		out = append(out, Transition{Out: Outcome{Kind: Claimed, Event: c.Event, Gen: c.Gen}, Next: next})
	}
	return out
}

// withPending adds p to a list kept sorted by worker; pending is already a copy.
func withPending(pending []PendingClaim, p PendingClaim) []PendingClaim {
	i, _ := slices.BinarySearchFunc(pending, p.Worker, func(q PendingClaim, w string) int { return cmp.Compare(q.Worker, w) })
	return slices.Insert(pending, i, p)
}

// commit makes worker's open claim what other connections see.
func (s State) commit(worker string) State {
	p := s.Pending[s.pending(worker)]
	next := s.rollback(worker)
	if p.Event == "" {
		return next
	}
	take(&next.Rows[next.row(p.Event)])
	next.Claims = append(next.Claims, Claim(p))
	return next
}

// rollback ends worker's open claim transaction, if any, without effect.
func (s State) rollback(worker string) State {
	next := s.clone()
	k := next.pending(worker)
	if k < 0 {
		return next
	}
	if i := next.row(next.Pending[k].Event); i >= 0 {
		next.Rows[i].LockedBy = ""
	}
	next.Pending = slices.Delete(next.Pending, k, k+1)
	return next
}

// update is complete, retry or renew: applied only for the row's current
// generation while its lease is live (the strict policy).
func (s State) update(op Op) []Transition {
	next := s.clone()
	if !s.IsCurrent(Claim{Worker: op.Worker, Event: op.Event, Gen: op.Gen}) {
		return one(Rejected, next)
	}
	r := &next.Rows[next.row(op.Event)]
	switch op.Kind {
	case Complete:
		r.Status, r.LeaseLive = Sent, false
	case Retry:
		r.Status, r.LeaseLive, r.Due = Ready, false, false
	case Renew:
		// The lease runs at least the declared length from now: fresh.
		r.Aged, r.Renewed = false, true
	}
	return one(Applied, next)
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
	if !r.Aged {
		r.Aged = true
		return one(OK, next)
	}
	expired := next.clone()
	er := &expired.Rows[i]
	er.LeaseLive, er.Aged, er.Renewed = false, false, false
	return []Transition{{Out: Outcome{Kind: OK}, Next: expired}, {Out: Outcome{Kind: OK}, Next: next}}
}
