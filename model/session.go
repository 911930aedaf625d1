package model

// Session leases (lease=session, PROTOCOL-FORMAT.md "Session leases, and
// connection poolers"). A claim's lease is a lock the claiming worker's
// session takes and keeps past the claim statement, as que and good_job
// hold a job with pg_try_advisory_lock. No clock ends it: it ends when the
// session ends, or when the protocol releases it (an outcome that applies
// takes the row out of INPROGRESS). The model records which worker's
// session holds each live lease (Row.Holder) and ends those leases when:
//
//   - the worker is killed, or the machine ends its session (EndSession:
//     the backend is terminated and the process reconnects, a stale owner
//     from then on);
//   - the server restarts (every session ends);
//   - a fault hit one of the worker's steps (an unknown outcome): the
//     harness ends the backend of every connection a fault cut
//     (AmbiguousEnding).
//
// A row whose lease ended reads as an expired claim, or, for a protocol
// that keeps no status of its own for a claim (que keeps none), as READY
// and due (sameView).

// holds marks the rows a claim by worker took as held by its session.
func (s *State) holds(worker string, rows []int) {
	if !s.Policy.SessionLease {
		return
	}
	for _, i := range rows {
		s.Rows[i].Holder = worker
	}
}

// sessionEnded ends every lease worker's session held; s is already a
// copy of its own.
func (s State) sessionEnded(worker string) State {
	if !s.Policy.SessionLease {
		return s
	}
	for i := range s.Rows {
		r := &s.Rows[i]
		if r.Holder != worker {
			continue
		}
		r.Holder = ""
		switch {
		case r.Status == InProgress && r.Rescheduled:
			release(r, false)
		case r.Status == InProgress:
			r.LeaseLive, r.Aged, r.Renewed = false, false, false
		}
	}
	return s
}

// everySessionEnded ends every session lease (the server went away).
func (s State) everySessionEnded() State {
	for _, r := range s.Rows {
		if r.Holder != "" {
			s = s.sessionEnded(r.Holder)
		}
	}
	return s
}

// AmbiguousEnding is Ambiguous for a step whose connection the harness
// then ends: under lease=session every state also has the worker's
// session ended, and with it the leases it held, the one a lost claim
// may have taken included.
func (s State) AmbiguousEnding(op Op) []State {
	states := s.Ambiguous(op)
	if !s.Policy.SessionLease || op.Worker == "" {
		return states
	}
	for i, st := range states {
		states[i] = st.clone().sessionEnded(op.Worker)
	}
	return Dedup(states)
}

// withoutSessionEnd is after with the changes a session's end made undone:
// under lease=session the harness ends the connection of a step whose
// outcome is unknown, and every lease that session held ends with it, on
// rows the step itself never named. A live lease that reads as expired, or
// as READY and due, after such a step is the session's end, not the
// step's doing.
func withoutSessionEnd(p Policy, before, after []RowView, out Outcome) []RowView {
	if !p.SessionLease || out.Kind != Unknown {
		return after
	}
	was := map[string]RowView{}
	for _, b := range before {
		was[b.Event] = b
	}
	out2 := make([]RowView, len(after))
	for i, a := range after {
		out2[i] = a
		b, ok := was[a.Event]
		live := ok && b.Status == InProgress && !b.LeaseExpired
		if live && (a.Status == InProgress && a.LeaseExpired || a.Status == Ready && a.Due) {
			out2[i] = b
		}
	}
	return out2
}

// readsAsReady reports whether a row the model has as an expired session
// lease may be read as READY and due: a protocol that keeps no status for
// a claim shows the row as it was before it, once the lock is gone.
func readsAsReady(model, read RowView, p Policy) bool {
	return p.SessionLease && model.Status == InProgress && model.LeaseExpired &&
		read.Status == Ready && read.Due
}

// readsAsHeld reports whether a row may be read with a session lease held
// that the model has ended: only in a profile that relaxes
// no_stranded_row, whose rule "a session lease outlived its session" is
// that read. Through a transaction pooler a lock stays on the server
// connection its claim ran on: after the session that took it has ended,
// and after an outcome that applied but whose unlock ran on another
// server connection (the model has the row READY). The model keeps the
// lease ended, and the relaxed claim may then leave the row behind.
func readsAsHeld(model, read RowView, hasGen bool, p Policy) bool {
	ended := model.Status == InProgress && model.LeaseExpired || model.Status == Ready
	return p.SessionLease && p.relaxed(NoStrandedRow) &&
		model.Event == read.Event && (!hasGen || model.Gen == read.Gen) &&
		ended && read.Status == InProgress && !read.LeaseExpired
}
