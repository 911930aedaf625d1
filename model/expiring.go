package model

import "fmt"

// Begin(expire e): a claim transaction whose first statement is the
// expire fixture's UPDATE of e's row, run on the worker's own connection,
// and whose claim follows in the same transaction. The fixture's lock is
// taken while e's lease is still live for every other connection, so an
// outcome of e's owner sent now passes its guard on the committed row and
// waits for the lock; the commit makes the expiry and the reclaim visible
// at once. It is how a single machine step reaches the window READ
// COMMITTED leaves inside one statement: a statement that waited on a row
// lock re-checks only the target row's newest version, and a reclaim can
// commit between the lock's release and that re-check; here the reclaim is
// already in the version the waiter wakes to. A guard read from the
// statement's snapshot (a subquery, a CTE, a join) still sees the old
// claim's generation there.

// expirePrefix starts Begin's argument when it expires a row first:
// w2.Begin(expire e1).
const expirePrefix = "expire "

// CanExpireInTx is why Begin(expire event) cannot run now, or nil: its
// UPDATE needs a live lease that no open transaction holds.
func (s State) CanExpireInTx(event string) error {
	i := s.row(event)
	if i < 0 {
		return fmt.Errorf("Begin(expire %s): no such row", event)
	}
	if r := s.Rows[i]; r.Status != InProgress || !r.LeaseLive || r.LockedBy != "" {
		return fmt.Errorf("Begin(expire %s): the row's lease is not live and free", event)
	}
	return nil
}

// beginExpiring is Begin(expire event)'s transitions: the claims of a
// transaction that sees event's lease expired, with event's row locked
// by it and, for the others, unchanged until the commit.
func (s State) beginExpiring(worker, event string) []Transition {
	i := s.row(event)
	seen := s.fixture(Op{Kind: Expire, Event: event})
	var out []Transition
	for _, t := range seen.claim(worker, true) {
		next := t.Next
		next.Rows[i] = s.Rows[i]
		next.Rows[i].LockedBy = worker
		k := next.pending(worker)
		next.Pending[k].Expire = event
		out = append(out, Transition{Out: t.Out, Next: next})
	}
	return out
}
