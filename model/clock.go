package model

// The model ends a lease only by a fixture (Expire, Age), never by the
// clock: a check runs in well under a second, so a lease of the declared
// length (30 s by default, at least 1 s) outlives it. A program slowed by
// failovers on a loaded machine can outlast it, though, and then the row's
// lease has run out on the server while the model holds it live. The
// harness, which keeps when each lease was granted, asks for RunOut's
// states then: the lease may have run out, or (granted for longer than
// declared, which the policy allows) may not.

// RunOut is s with any subset of events' live leases run out: every state
// the clock may have made of s, s itself first. An event whose row holds
// no live lease, or a session lease (which only its session's end ends),
// is left as it is.
func (s State) RunOut(events []string) []State {
	out := []State{s}
	if s.Policy.SessionLease {
		return out
	}
	for _, e := range events {
		i := s.row(e)
		if i < 0 || s.Rows[i].Status != InProgress || !s.Rows[i].LeaseLive {
			continue
		}
		for _, st := range out {
			out = append(out, st.fixture(Op{Kind: Expire, Event: e}))
		}
	}
	return Dedup(out)
}
