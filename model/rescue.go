package model

import "slices"

// The rescue is a separate actor's maintenance pass (a reaper, a rescuer,
// a lock reset). The policy it is held to:
//
//   - it never changes a live lease, a SENT row, a DEAD row or a READY row;
//   - it makes every expired last attempt (max_attempts spent) DEAD;
//   - each other expired claim it may return to READY, due at once or
//     after a backoff, or leave for a claim that takes expired leases.
//
// The choices multiply: every combination is a transition, and the
// observation keeps the ones that match. With at most a handful of events
// in a check this stays small (3^4 for four expired rows).

// rescueChoices are what the rescue may do to one expired, unexhausted row.
var rescueChoices = []func(*Row){
	func(*Row) {}, // left for a claim that takes expired leases
	func(r *Row) { release(r, true) },
	func(r *Row) { release(r, false) },
}

// release returns an expired claim to READY, due now or after a backoff.
// Its generation stays: the attempt was spent.
func release(r *Row, due bool) {
	r.Status, r.Due = Ready, due
	r.LeaseLive, r.Aged, r.Renewed, r.Rescheduled = false, false, false, false
}

// rescue is every state one rescue pass may leave.
func (s State) rescue() []Transition { return s.rescuePass(false) }

// rescuePass is rescue; writeBack is the last part of a split rescue,
// which with terminal relaxed may also write what it chose by its read
// over a row given back (READY) in between, as over one finished (SENT):
// the same race of a rescue whose write does not re-check its read.
func (s State) rescuePass(writeBack bool) []Transition {
	states := []State{s.clone()}
	budget := !s.Policy.relaxed(AttemptBudget)
	if budget {
		for _, i := range s.exhaustedRows() {
			bury(&states[0].Rows[i])
		}
	}
	choices := rescueChoices
	if s.Policy.relaxed(AttemptBudget) {
		choices = append(slices.Clone(choices), bury) // DEAD at any attempt
	}
	for i, r := range s.Rows {
		// With one_live_owner relaxed a rescue may take live leases too;
		// with terminal relaxed, SENT rows (a rescue that wrote back by id
		// the rows it read, one finished in between: River's).
		live := r.LeaseLive && !s.Policy.relaxed(OneLiveOwner)
		sent := r.Status == Sent && s.Policy.relaxed(Terminal) && r.LockedBy == ""
		givenBack := writeBack && r.Status == Ready && s.Policy.relaxed(Terminal) && r.LockedBy == ""
		if !sent && !givenBack && (r.Status != InProgress || live || r.LockedBy != "" || s.exhausted(r) && budget) {
			continue
		}
		rowChoices := choices
		if givenBack && budget && s.exhausted(r) {
			rowChoices = append(slices.Clone(choices), bury) // its read found a spent attempt
		}
		var grown []State
		for _, st := range states {
			for _, choose := range rowChoices {
				next := st.clone()
				choose(&next.Rows[i])
				grown = append(grown, next)
			}
		}
		states = grown
	}
	out := make([]Transition, 0, len(states))
	for _, st := range Dedup(states) {
		out = append(out, Transition{Out: Outcome{Kind: OK}, Next: st})
	}
	return out
}

// rescueBlocks reports whether a rescue may wait on a row lock: an open
// claim transaction holds an expired row (a reclaim, or a claim burying
// it), which a rescue's UPDATE of expired rows would wait for unless it
// skips locked rows. If it waits, it is judged from the state the
// holder's end leaves (see WaitsOn): a rescue whose guard is re-checked on
// the row as the reclaim left it finds a live lease and leaves it; one
// whose guard was read from its snapshot takes the new owner's claim.
func (s State) rescueBlocks() bool {
	return len(s.rescueHolders()) > 0
}

// rescueHolders are the workers whose open claim transactions hold an
// expired row, in the order of the rows.
func (s State) rescueHolders() []string {
	var out []string
	for _, r := range s.Rows {
		// (The rescuer's own locks, a split rescue's, are not in its way.)
		if r.Status == InProgress && !r.LeaseLive && r.LockedBy != "" && r.LockedBy != Rescuer && !slices.Contains(out, r.LockedBy) {
			out = append(out, r.LockedBy)
		}
	}
	return out
}

// rescueHolder is the one worker a blocked rescue waits on, or "" when
// there are several (or none), or when the rescue has other rows to
// change. A rescue that changes a row before it meets the lock holds that
// row's lock while it waits, which claims would skip; the model does not
// follow such half-done rescues, so it lets a rescue wait only where the
// holder's rows are all it could touch.
func (s State) rescueHolder() string {
	h := s.rescueHolders()
	if len(h) != 1 {
		return ""
	}
	key := s.Key()
	for _, tr := range s.rescue() {
		if tr.Next.Key() != key {
			return ""
		}
	}
	return h[0]
}
