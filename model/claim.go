package model

import (
	"cmp"
	"slices"
)

// A claim's allowed outcomes. Version 1 has one (fifo) or one per eligible
// row (any). Version 2 widens them in three ways, each a choice the
// observation then settles (Match):
//
//   - batch: a claim takes up to Batch rows, all of them when fewer are
//     eligible: the earliest ones (fifo), or any set of that size (any);
//   - a rescue section: the claim may leave expired leases to the rescue,
//     so the eligible set is computed with and without them;
//   - max_attempts: an expired last attempt is made DEAD by the claim
//     (without a rescue section it must be, with one it may be: the rescue
//     may do it instead). All exhausted rows are buried, or none.

// claim is an autocommit claim, or with inTx the claim inside a
// transaction that Begin opens: the rows are locked but their committed
// fields change only at Commit.
func (s State) claim(worker string, inTx bool) []Transition {
	return s.claimTransitions(worker, inTx, s.claimPicks(), s.buryChoices())
}

// claimPicks are the sets of rows a claim may take.
func (s State) claimPicks() [][]int {
	eligible := s.eligibleRows(true)
	picks := s.picks(eligible)
	if s.Policy.Rescue || s.Policy.relaxed(NoStrandedRow) {
		// Expired leases may be left to the rescue (or to nobody).
		picks = append(picks, s.picks(s.eligibleRows(false))...)
	}
	if loose := s.looseRows(); len(loose) > len(eligible) {
		// A relaxed property lets the claim take other rows too: any
		// set of up to a batch of them, in any order.
		for k := 1; k <= min(s.Policy.batch(), len(loose)); k++ {
			picks = append(picks, subsets(loose, k)...)
		}
	}
	return picks
}

// buryChoices are the sets of exhausted rows a claim may make DEAD.
func (s State) buryChoices() [][]int {
	bury := [][]int{s.exhaustedRows()}
	if s.Policy.relaxed(AttemptBudget) {
		// None may go DEAD, or those past the declared budget, or every
		// expired claim.
		bury = [][]int{nil, s.exhaustedRows(), s.expiredRows()}
	}
	if s.Policy.Rescue && len(bury[0]) > 0 {
		bury = append(bury, nil)
	}
	return bury
}

// claimTransitions are a claim's transitions for each set of rows it may
// take and each set of rows it may bury, de-duplicated.
func (s State) claimTransitions(worker string, inTx bool, picks, bury [][]int) []Transition {
	short := []bool{false}
	if s.Policy.relaxed(OneLiveOwner) {
		short = append(short, true) // the lease granted may be too short
	}
	if len(picks) == 1 && len(bury) == 1 && len(short) == 1 {
		// Version 1's fifo claim: one transition, nothing to de-duplicate.
		return []Transition{s.claimRows(worker, inTx, picks[0], without(bury[0], picks[0]), false)}
	}
	var out []Transition
	seen := map[string]bool{}
	for _, rows := range picks {
		for _, dead := range bury {
			for _, tooShort := range short {
				t := s.claimRows(worker, inTx, rows, without(dead, rows), tooShort)
				if k := t.Out.String() + " " + t.Next.Key(); !seen[k] {
					seen[k] = true
					out = append(out, t)
				}
			}
		}
	}
	return out
}

// looseRows are the rows a claim may take with the relaxed properties.
func (s State) looseRows() []int {
	var out []int
	for i, r := range s.Rows {
		if s.loose(r) {
			out = append(out, i)
		}
	}
	return out
}

// expiredRows are the expired claims no open transaction holds.
func (s State) expiredRows() []int {
	var out []int
	for i, r := range s.Rows {
		if r.Status == InProgress && !r.LeaseLive && r.LockedBy == "" {
			out = append(out, i)
		}
	}
	return out
}

// without is rows minus those in taken.
func without(rows, taken []int) []int {
	var out []int
	for _, i := range rows {
		if !slices.Contains(taken, i) {
			out = append(out, i)
		}
	}
	return out
}

// exhaustedRows are the rows a claim or rescue must make DEAD: an expired
// last attempt that no open transaction holds.
func (s State) exhaustedRows() []int {
	var out []int
	for i, r := range s.Rows {
		if r.Status == InProgress && !r.LeaseLive && r.LockedBy == "" && s.exhausted(r) {
			out = append(out, i)
		}
	}
	return out
}

// picks are the sets of rows one claim may take from eligible (in enqueue
// order): the first Batch (fifo), or every set of min(Batch, n) rows (any).
//
// With no_stranded_row relaxed a claim may leave any eligible row behind:
// any set of up to a batch of them, none included; with the order relaxed,
// any set of the size it must take.
func (s State) picks(eligible []int) [][]int {
	n := min(s.Policy.batch(), len(eligible))
	switch {
	case s.Policy.relaxed(NoStrandedRow):
		var out [][]int
		for k := 0; k <= n; k++ {
			out = append(out, subsets(eligible, k)...)
		}
		return out
	case n == 0:
		return [][]int{nil}
	case s.Policy.Order != Any && !s.Policy.relaxed(FIFOOrder):
		return [][]int{eligible[:n]}
	}
	return subsets(eligible, n)
}

// subsets lists every n-element subset of from, each in from's order.
func subsets(from []int, n int) [][]int {
	if n == 0 {
		return [][]int{nil}
	}
	var out [][]int
	for i := 0; i+n <= len(from); i++ {
		for _, rest := range subsets(from[i+1:], n-1) {
			out = append(out, append([]int{from[i]}, rest...))
		}
	}
	return out
}

// claimRows is the transition of a claim that takes rows and buries dead;
// with short, the leases it grants have already run out (a lease shorter
// than declared, allowed only with one_live_owner relaxed).
func (s State) claimRows(worker string, inTx bool, rows, dead []int, short bool) Transition {
	next := s.clone()
	var grants []Grant
	for _, i := range rows {
		grants = append(grants, Grant{Event: next.Rows[i].Event, Gen: next.Rows[i].Gen + 1})
	}
	out := Outcome{Kind: Empty}
	if len(grants) > 0 {
		out = Outcome{Kind: Claimed, Event: grants[0].Event, Gen: grants[0].Gen, More: grants[1:]}
		if len(out.More) == 0 {
			out.More = nil
		}
	}
	if inTx {
		p := PendingClaim{Worker: worker, Event: out.Event, Gen: out.Gen, More: out.More}
		for _, i := range append(slices.Clone(rows), dead...) {
			next.Rows[i].LockedBy = worker
		}
		for _, i := range dead {
			p.Bury = append(p.Bury, next.Rows[i].Event)
		}
		next.Pending = withPending(next.Pending, p)
		return Transition{Out: out, Next: next}
	}
	for _, i := range rows {
		take(&next.Rows[i])
		if short {
			next.Rows[i].LeaseLive = false
		}
	}
	next.holds(worker, rows)
	for _, i := range dead {
		bury(&next.Rows[i])
	}
	for _, g := range grants {
		next.record(worker, g)
	}
	return Transition{Out: out, Next: next}
}

// record notes that worker received the claim g of a row just taken: the
// claim gets the next ID and owns the row. next is already a copy.
func (next *State) record(worker string, g Grant) {
	c := Claim{Worker: worker, Event: g.Event, Gen: g.Gen, ID: len(next.Claims) + 1}
	next.Claims = append(next.Claims, c)
	next.Rows[next.row(g.Event)].Owner = c.ID
}

// take is the claim statement's write: the row is owned, under a new
// generation, with a live lease.
func take(r *Row) {
	r.Status = InProgress
	r.Gen++
	r.Owner = 0 // no worker has received it yet (record)
	r.LeaseLive = true
	r.Aged, r.Renewed = false, false
	r.Due = false
	r.LockedBy = ""
	r.Rescheduled = false
}

// bury makes an exhausted row DEAD: terminal, no lease.
func bury(r *Row) {
	r.Status = Dead
	r.LeaseLive, r.Aged, r.Renewed, r.Due = false, false, false, false
	r.LockedBy = ""
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
	if p.Expire != "" {
		next = next.fixture(Op{Kind: Expire, Event: p.Expire})
	}
	for _, g := range p.grants() {
		take(&next.Rows[next.row(g.Event)])
		next.holds(worker, []int{next.row(g.Event)})
		next.record(worker, g)
	}
	for _, e := range p.Bury {
		bury(&next.Rows[next.row(e)])
	}
	return next
}

// rollback ends worker's open claim transaction, if any, without effect.
func (s State) rollback(worker string) State {
	next := s.clone()
	k := next.pending(worker)
	if k < 0 {
		return next
	}
	p := next.Pending[k]
	for _, g := range p.grants() {
		next.Rows[next.row(g.Event)].LockedBy = ""
	}
	for _, e := range p.Bury {
		next.Rows[next.row(e)].LockedBy = ""
	}
	if p.Expire != "" {
		next.Rows[next.row(p.Expire)].LockedBy = ""
	}
	next.Pending = slices.Delete(next.Pending, k, k+1)
	return next
}
