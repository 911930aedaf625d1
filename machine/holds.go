package machine

// holdsNothing reports whether w's backend holds no lock and runs no
// statement: no open transaction in any model state the run may be in, and
// no fault that could leave a statement in flight. Between two steps a
// backend without a transaction holds no row lock. A session lock kept
// across steps is a session lease (lease=session), which the model follows
// (holdsSession); any other would already break the model without kills.
func (r *run) holdsNothing(w string) bool {
	if r.h.Faults != nil || r.faultPending {
		return false
	}
	for _, s := range r.states {
		for _, p := range s.Pending {
			if p.Worker == w {
				return false
			}
		}
	}
	// A session lease is a lock the session holds between steps: the
	// kill must wait for the backend to let go of it.
	return !r.holdsSession(w)
}
