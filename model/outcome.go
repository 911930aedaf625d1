package model

import "slices"

// The outcome steps: complete, retry and renew, under the strict or the
// lenient policy, and what a relaxed property lets them do.

// update is complete, retry or renew: applied only for the row's current
// generation while its lease is live (the strict policy). Under the
// lenient policy an expired owner whose row nobody has taken since (no
// later claim, no rescue) may also see it apply or be rejected: both are
// allowed. With done=delete, an applied complete may also delete the row.
func (s State) update(op Op) []Transition {
	c := s.ClaimOf(op)
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
		r.Holder = "" // the owner's own outcome lets its session's lock go
		if p.Delete {
			gone := next.clone()
			gone.Rows = slices.Delete(gone.Rows, i, i+1)
			out = append(out, gone)
		}
	case Retry:
		r.Status, r.LeaseLive, r.Due, r.Aged, r.Renewed = Ready, false, false, false, false
		r.Holder = ""
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
// makes it READY, due or waiting, or DEAD, or leaves a SENT or DEAD row as
// it was (que's retry of a finished job only reschedules it: the answer
// breaks terminal, the row keeps it); a renew leaves it as it was or with
// a live lease if it is in progress, or no longer due if it waits in the
// queue.
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
		r := s.Rows[i]
		if r.Status == Sent || r.Status == Dead {
			out = append(out, s.clone())
		}
		if r.Holder != "" && r.Holder != op.Worker && (r.Status != InProgress || r.LeaseLive) {
			// A session lease another worker holds (or held, when a
			// stale outcome finished its row since): a stale retry by id
			// moves the job's next run, or puts a finished one back in
			// the queue (good_job re-enqueues), but cannot end that
			// session's lock, so the row reads as the holder's claim.
			with(func(r *Row) { r.Status, r.LeaseLive, r.Rescheduled = InProgress, true, true })
		}
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
	return Dedup(out)
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
	case s.lost(c):
		// A rewind took the claim away: its generation may be the row's
		// again, reissued to another claim, which fencing's relaxing
		// lets it finish.
		if r.Status == Sent || r.Status == Dead {
			return s.Policy.relaxed(Terminal)
		}
		return s.Policy.relaxed(Fencing)
	case r.Status == InProgress && s.owns(c, r):
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
	return r.Status == InProgress && s.owns(c, r) && !r.LeaseLive
}
