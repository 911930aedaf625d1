package model

import "slices"

// A rewind (PROTOCOL-FORMAT.md, "Version 3"): under async-commit a Crash,
// under async-standby a Failover, brings the server back as it was after
// some prefix of the commits made since the last point known durable.
// Which prefix is the next read's to decide, as for an ambiguous outcome:
// the machine keeps the possible states after each step since that point
// and offers every one of them, rewound (RewoundTo), to that read.
//
// What no protocol can promise across a rewind follows from taking the
// older state as it was: a SENT that is lost leaves its event claimable
// again, a lost claim spends no attempt (the row's count went back with
// it), a lost enqueue is gone with its event, and a lost fixture is
// undone. What a protocol can promise is kept by the claims: every claim a
// worker received after the prefix is lost (State.Lost), and its owner is
// a stale owner from then on, whatever claims come after.

// rolledBack is the state after every connection died: every open
// transaction rolled back.
func (s State) rolledBack() State {
	next := s.clone()
	for _, p := range s.Pending {
		next = next.rollback(p.Worker)
	}
	return next
}

// RewoundTo is s after a rewind to past, one of the states s came from
// since the last durable point: past's rows, no open transaction, and
// every claim received since past lost. The workers still hold those
// claims (s.Claims), and will send their outcomes.
func (s State) RewoundTo(past State) State {
	next := past.rolledBack()
	kept := min(len(past.Claims), len(s.Claims))
	next.Claims = slices.Clone(s.Claims)
	next.Lost = append(slices.Clone(s.Lost), s.Claims[kept:]...)
	return next
}

// lost reports whether c is a claim some rewind took away. A later claim
// of the same row may carry the same generation (a counter reissued after
// the rewind): it is another claim, with its own ID.
func (s State) lost(c Claim) bool {
	return c.ID > 0 && slices.ContainsFunc(s.Lost, func(l Claim) bool { return l.ID == c.ID })
}

// Rewinds reports whether op's kind may lose acknowledged commits.
func (k Kind) Rewinds() bool { return k == Crash || k == Failover }

// ServerFault reports whether op's kind is a fault of the server: a
// restart, crash or failover, or the flush or stall that sets the point
// a crash or failover goes back to.
func (k Kind) ServerFault() bool {
	switch k {
	case Restart, Crash, Failover, Flush, Stall:
		return true
	}
	return false
}
