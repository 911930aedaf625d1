package model

// Ambiguous returns the states op may have left behind when the acting
// connection failed around it (outcome Unknown), de-duplicated by Key. The
// caller keeps them all and lets the next observation decide (Match).
//
//   - Claim: nothing happened, or any row the claim may take was claimed.
//     The worker never learned of that claim, so it is not recorded in
//     Claims: the row is owned by nobody until its lease expires.
//   - Begin: the transaction is lost with the connection: nothing happened.
//   - Commit: rolled back, or committed. Either way the worker got an error
//     and does not know it owns the row, so the claim is not recorded.
//   - Rollback: rolled back either way.
//   - Enqueue, Complete, Retry, Renew, Expire, MakeDue: not applied, or
//     applied exactly as Step would.
//   - Pause, Resume, Kill, Respawn and the server faults run no
//     statement of a worker's: their states are Step's.
//
// An op whose Precondition fails has no states.
func (s State) Ambiguous(op Op) []State {
	if s.Precondition(op) != nil {
		return nil
	}
	if op.Part.First() {
		// Nothing of a first part commits: lost with its connection, its
		// transaction rolled back.
		return []State{s.clone()}
	}
	switch op.Kind {
	case ClaimOp:
		states := []State{s.clone()}
		for _, t := range s.Step(op) {
			states = append(states, unrecorded(t.Next, len(s.Claims)))
		}
		return Dedup(states)
	case Begin:
		return []State{s.clone()}
	case Commit:
		return Dedup([]State{s.rollback(op.Worker), unrecorded(s.commit(op.Worker), len(s.Claims))})
	case Rollback:
		return []State{s.rollback(op.Worker)}
	case Pause, Resume, Kill, EndSession, Respawn, Restart, Flush, Stall, Crash, Failover:
		return nextStates(s.Step(op))
	}
	return Dedup(append([]State{s.clone()}, nextStates(s.Step(op))...))
}

// unrecorded forgets the claims recorded after the first n: the rows they
// took are owned by no worker's claim. next is already a copy of its own.
func unrecorded(next State, n int) State {
	next.Claims = next.Claims[:n:n]
	for i := range next.Rows {
		if next.Rows[i].Owner > n {
			next.Rows[i].Owner = 0
		}
	}
	return next
}

func nextStates(ts []Transition) []State {
	out := make([]State, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Next)
	}
	return out
}
