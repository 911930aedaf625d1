package model

import (
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
		next := s.commit(op.Worker)
		if !s.Policy.relaxed(OneLiveOwner) {
			return one(OK, next)
		}
		short := next.clone()
		for _, g := range s.Pending[s.pending(op.Worker)].grants() {
			short.Rows[short.row(g.Event)].LeaseLive = false
		}
		return []Transition{{Out: Outcome{Kind: OK}, Next: next}, {Out: Outcome{Kind: OK}, Next: short}}
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
	if s.Blocks(op) {
		if op.Kind == Rescue {
			return fmt.Errorf("%s waits for an open claim transaction on an expired row", op)
		}
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

// update is complete, retry or renew: applied only for the row's current
// generation while its lease is live (the strict policy). Under the
// lenient policy an expired owner whose row nobody has taken since (no
// later claim, no rescue) may also see it apply or be rejected: both are
// allowed. With done=delete, an applied complete may also delete the row.
func (s State) update(op Op) []Transition {
	c := Claim{Worker: op.Worker, Event: op.Event, Gen: op.Gen}
	optional := s.Late(c) || s.relaxedStale(c)
	if !s.IsCurrent(c) && !optional {
		return one(Rejected, s.clone())
	}
	var out []Transition
	effects := s.applied(op)
	if !s.IsCurrent(c) && !s.Late(c) {
		// A relaxed stale outcome acts on a row that is no longer its
		// claim's: what it does there depends on what the protocol
		// computes from the stale values it was sent, so any effect
		// of its kind is allowed.
		effects = s.anyEffect(op)
	}
	for _, next := range effects {
		out = append(out, Transition{Out: Outcome{Kind: Applied}, Next: next})
	}
	if optional {
		out = append(out, Transition{Out: Outcome{Kind: Rejected}, Next: s.clone()})
	}
	return out
}

// applied is every state an applied complete, retry or renew may leave.
// With done=delete a complete may also delete the row; with the backoff
// relaxed a retry may leave the row due; with the budget relaxed a retry
// may make it DEAD at any attempt.
func (s State) applied(op Op) []State {
	p := s.Policy
	next := s.clone()
	i := next.row(op.Event)
	r := &next.Rows[i]
	out := []State{next}
	switch op.Kind {
	case Complete:
		r.Status, r.LeaseLive, r.Aged, r.Renewed = Sent, false, false, false
		if p.Delete {
			gone := next.clone()
			gone.Rows = slices.Delete(gone.Rows, i, i+1)
			out = append(out, gone)
		}
	case Retry:
		r.Status, r.LeaseLive, r.Due, r.Aged, r.Renewed = Ready, false, false, false, false
		if s.exhausted(*r) && !p.relaxed(AttemptBudget) {
			// The last attempt failed: the event is dead, at once.
			r.Status = Dead
		}
		if p.relaxed(Backoff) && r.Status == Ready {
			due := next.clone()
			due.Rows[i].Due = true
			out = append(out, due)
		}
		if p.relaxed(AttemptBudget) {
			dead := next.clone()
			bury(&dead.Rows[i])
			out = append(out, dead)
		}
	case Renew:
		if r.Status != InProgress {
			break // a renew of a row no longer in progress changes nothing
		}
		// The lease runs at least the declared length from now: fresh.
		r.LeaseLive, r.Aged, r.Renewed = true, false, true
		if p.relaxed(OneLiveOwner) {
			short := next.clone()
			short.Rows[i].LeaseLive = false
			out = append(out, short)
		}
	}
	return out
}

// anyEffect is every state an outcome of op's kind may leave on its row:
// a complete makes it SENT (or deletes it under done=delete); a retry
// makes it READY, due or waiting, or DEAD; a renew leaves it as it was or
// with a live lease if it is in progress, or no longer due if it waits in
// the queue.
func (s State) anyEffect(op Op) []State {
	i := s.row(op.Event)
	var out []State
	with := func(f func(r *Row)) {
		next := s.clone()
		f(&next.Rows[i])
		out = append(out, next)
	}
	switch op.Kind {
	case Complete:
		with(func(r *Row) { r.Status, r.LeaseLive, r.Aged, r.Renewed = Sent, false, false, false })
		if s.Policy.Delete {
			gone := s.clone()
			gone.Rows = slices.Delete(gone.Rows, i, i+1)
			out = append(out, gone)
		}
	case Retry:
		with(func(r *Row) { release(r, true) })
		with(func(r *Row) { release(r, false) })
		with(bury)
	case Renew:
		out = append(out, s.clone())
		switch s.Rows[i].Status {
		case InProgress:
			with(func(r *Row) { r.LeaseLive, r.Aged, r.Renewed = true, false, true })
		case Ready:
			// A stale "extend my lease" on a row back in the queue
			// pushes its next run out, as a backoff would.
			with(func(r *Row) { r.Due = false })
		}
	}
	return dedup(out)
}

// relaxedStale reports whether c is a claim that is no longer current but
// whose outcome a relaxed property lets apply: fencing relaxed, any old
// claim of a row that is INPROGRESS under a newer claim, or READY
// (retried or rescued since); terminal relaxed, any claim of a SENT or
// DEAD row.
func (s State) relaxedStale(c Claim) bool {
	i := s.row(c.Event)
	if i < 0 || s.IsCurrent(c) {
		return false
	}
	switch r := s.Rows[i]; {
	case r.Status == InProgress && r.Gen == c.Gen:
		// Still the claim's own row, its lease run out: strict_expiry's
		// to allow (Late), not fencing's.
		return false
	case r.Status == InProgress, r.Status == Ready:
		return s.Policy.relaxed(Fencing)
	}
	return s.Policy.relaxed(Terminal)
}

// Late reports whether c is an expired owner's claim that the lenient
// policy still lets finish: the row is still INPROGRESS at c's generation
// (no later claim, no rescue has taken it) and its lease has expired.
func (s State) Late(c Claim) bool {
	if !s.Policy.Lenient && !s.Policy.relaxed(StrictExpiry) {
		return false
	}
	i := s.row(c.Event)
	if i < 0 {
		return false
	}
	r := s.Rows[i]
	return r.Status == InProgress && r.Gen == c.Gen && !r.LeaseLive
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
