package model

import "slices"

// A split claim. A claim of several statements is split like an outcome
// (split.go), and for the same reason: under READ COMMITTED its second
// statement sees what others committed since its first. A claim that
// reads its candidate into a temporary table without a lock and then
// updates that row by id may take a row another worker claimed in
// between:
//
//	2. w1.Claim() [1/2] -> ok
//	3. w2.Claim() -> claimed e1 gen=1
//	4. w1.Claim() [2/2] -> claimed e1 gen=2   // model: e1 is w2's
//
// The first part changes no committed row; it marks the rows it could
// have read as claimable or spent (Row.ReadBy), and the harness has the
// model hold the rows it locked (Hold). The last part is judged against
// the state when it commits, in two ways at once, since the model cannot
// tell in which statement the protocol chose its rows:
//
//   - as the whole claim then (it chose at its last statement), or
//   - as taking rows its first part could have chosen: read rows still
//     claimable at commit, as many as a batch takes of them, in any
//     order (the read's own order is not kept: a split claim is not
//     held to fifo among the rows it read).
//
// When its first part locked claimable rows, those are the rows it chose.
// Otherwise, when a row its read found claimable was held by another open
// transaction then (a read with SKIP LOCKED passed it by), or is no longer
// claimable at commit (another claim took it, its owner finished it), the
// claim may also take
// fewer of the read rows, or none: a protocol that re-checks its pick and
// gives up has done nothing wrong, as in the concurrent mode a claim that
// overlaps another may skip the row (concurrent/history.go). Likewise the
// rows it buries are those spent at commit, or only those of them spent
// already at the read (a claim that buries in its first statement does
// not see a lease that ran out after it), or only those of these that no
// other open transaction held at the read (one that buries with SKIP
// LOCKED skipped those).

// readForClaim is the state after a split claim's first part by worker.
func (s State) readForClaim(worker string) State {
	next := s.clone()
	for i, r := range next.Rows {
		// A read without a lock sees the committed row, whoever holds it;
		// one with SKIP LOCKED does not, and is judged by what it locked.
		held := r.LockedBy != ""
		r.LockedBy = ""
		switch {
		case next.spent(r) && held:
			next.Rows[i].ReadBy, next.Rows[i].ReadAs = worker, ReadSpentHeld
		case next.spent(r):
			next.Rows[i].ReadBy, next.Rows[i].ReadAs = worker, ReadSpent
		case (next.eligible(r, true) || next.loose(r)) && held:
			next.Rows[i].ReadBy, next.Rows[i].ReadAs = worker, ReadClaimableHeld
		case next.eligible(r, true) || next.loose(r):
			next.Rows[i].ReadBy, next.Rows[i].ReadAs = worker, ReadClaimable
		}
	}
	return next
}

// spent reports whether a claim must (or may) bury r: an expired last
// attempt.
func (s State) spent(r Row) bool {
	return r.Status == InProgress && !r.LeaseLive && s.exhausted(r)
}

// finishClaim is a split claim's last part by worker: its locks released,
// its read's marks cleared, the claim judged as above.
func (s State) finishClaim(worker string) []Transition {
	free := s.release(worker)
	var read, readSpent, readSpentFree, held []int
	lost := false
	for i, r := range free.Rows {
		if r.ReadBy != worker {
			continue
		}
		as := r.ReadAs
		free.Rows[i].ReadBy, free.Rows[i].ReadAs = "", ReadClaimable
		switch {
		case as == ReadSpent:
			readSpentFree = append(readSpentFree, i)
			readSpent = append(readSpent, i)
		case as == ReadSpentHeld:
			readSpent = append(readSpent, i)
		case free.eligible(r, true) || free.loose(r):
			read = append(read, i)
			if s.Rows[i].LockedBy == worker {
				held = append(held, i)
			}
			if as == ReadClaimableHeld {
				lost = true // a read that skips locked rows passed it by
			}
		case !free.spent(r):
			lost = true // taken, or finished, since the read
		}
	}
	if len(held) > 0 {
		// Its read locked what it chose: nobody could take those.
		read, lost = held, false
	}
	picks := free.claimPicks()
	n := min(free.Policy.batch(), len(read))
	low := n
	if lost {
		low = 0
	}
	for k := low; k <= n; k++ {
		picks = append(picks, subsets(read, k)...)
	}
	bury := free.buryChoices()
	for _, dead := range bury {
		bury = append(bury, intersect(dead, readSpent), intersect(dead, readSpentFree))
	}
	return free.claimTransitions(worker, false, picks, bury)
}

// intersect is the rows of a that are also in b, in a's order.
func intersect(a, b []int) []int {
	var out []int
	for _, i := range a {
		if slices.Contains(b, i) {
			out = append(out, i)
		}
	}
	return out
}
