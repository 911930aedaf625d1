package concurrent

import (
	"slices"

	"github.com/outboxlab/outboxlab/model"
)

// The step rules of a concurrent history: model.State's own, plus what
// real concurrency adds to a sequential step. Pure functions, no I/O.
//
//   - A statement whose row an open claim transaction holds either did not
//     need the lock (its guard, read from the committed row, already
//     refused: the row unchanged) or waited for it, in which case it is
//     linearized after the holder commits or rolls back and judged there.
//     So while the lock is held it may only be a no-op.
//   - A claim or a rescue skips rows locked for an instant by another
//     statement that was running at the same time (a complete, a fixture's
//     UPDATE): Input.MaySkip names them, and any subset of them may have
//     been locked at the claim's moment.
//   - A Commit or Rollback whose outcome is unknown after the transaction
//     was already lost (to a kill or a restart linearized before it) did
//     nothing.

// phantom marks a row locked by a concurrent statement for one claim step.
const phantom = "~concurrent"

// Steps returns the states s may move to when in ran and returned out.
func Steps(s model.State, in Input, out Output, hasGen bool) []model.State {
	if in.Observe {
		return model.Match([]model.State{s}, out.Rows, hasGen)
	}
	op := in.Op
	switch op.Kind {
	case model.ClaimOp, model.Begin:
		return claimSteps(s, in, out, hasGen)
	case model.Rescue:
		return rescueSteps(s, in, out)
	case model.Commit, model.Rollback:
		if out.Out.Kind == model.Unknown && slices.IndexFunc(s.Pending, func(p model.PendingClaim) bool { return p.Worker == op.Worker }) < 0 {
			return []model.State{s}
		}
	case model.Complete, model.Retry, model.Renew, model.Expire, model.MakeDue, model.Age:
		steps := outcomeSteps(s, op, out, hasGen)
		if alt := countedClaim(s, op); !hasGen && alt != op {
			// A protocol that fences by the count refuses the short count;
			// one that fences by its claim's handle applies it to that claim.
			steps = append(steps, outcomeSteps(s, alt, out, hasGen)...)
		}
		return steps
	}
	return matching(s, op, out, hasGen)
}

// outcomeSteps is Steps for an outcome or a fixture.
func outcomeSteps(s model.State, op model.Op, out Output, hasGen bool) []model.State {
	if s.Blocks(op) {
		return noOpWhileLocked(s, op, out)
	}
	return matching(s, op, out, hasGen)
}

// matching is the states after op from s whose outcome is out (every
// ambiguous successor for an unknown outcome).
func matching(s model.State, op model.Op, out Output, hasGen bool) []model.State {
	if out.Out.Kind == model.Unknown {
		return s.Ambiguous(op)
	}
	var next []model.State
	for _, t := range s.Step(op) {
		if model.SameOutcome(t.Out, out.Out, hasGen) {
			next = append(next, t.Next)
		}
	}
	return next
}

// noOpWhileLocked allows op, whose row another transaction holds, only as
// a step that changed nothing: what the policy allows on the committed row
// (the lock's holder's changes are invisible) with that row unchanged.
func noOpWhileLocked(s model.State, op model.Op, out Output) []model.State {
	free := unlocked(s, op.Event)
	same := free.Key()
	if out.Out.Kind == model.Unknown {
		return []model.State{s} // not applied (applied waits for the lock)
	}
	for _, t := range free.Step(op) {
		if t.Out.Kind == out.Out.Kind && t.Next.Key() == same {
			return []model.State{s}
		}
	}
	return nil
}

// claimSteps is a claim's successors, with any subset of the rows in
// MaySkip locked by a concurrent statement at that moment.
func claimSteps(s model.State, in Input, out Output, hasGen bool) []model.State {
	var next []model.State
	for _, locked := range subsets(skippable(s, in.MaySkip)) {
		for _, st := range matching(withLock(s, locked, phantom), in.Op, out, hasGen) {
			next = append(next, withLock(st, locked, ""))
		}
	}
	return model.Dedup(next)
}

// rescueSteps is a rescue's successors: it skips rows locked by open claim
// transactions (or waits, and is linearized later) and, like a claim, the
// rows of statements running with it.
func rescueSteps(s model.State, in Input, out Output) []model.State {
	var next []model.State
	for _, locked := range subsets(skippable(s, in.MaySkip)) {
		st := withLock(s, locked, phantom)
		var states []model.State
		switch {
		case out.Out.Kind == model.Unknown:
			states = append(states, st)
			fallthrough
		default:
			for _, t := range st.RescueSkippingLocked() {
				states = append(states, t.Next)
			}
		}
		for _, n := range states {
			next = append(next, withLock(n, locked, ""))
		}
	}
	return model.Dedup(next)
}

// skippable is the events of may ("*": every event) whose row no
// transaction holds and a claim or rescue could take: a locked SENT, DEAD
// or live row changes no outcome.
func skippable(s model.State, may []string) []string {
	var out []string
	for _, r := range s.Rows {
		takable := r.Status == model.Ready || r.Status == model.InProgress && !r.LeaseLive
		if takable && r.LockedBy == "" && (slices.Contains(may, r.Event) || slices.Contains(may, "*")) {
			out = append(out, r.Event)
		}
	}
	return out
}

// withLock is s with the rows of events that no transaction holds locked
// by holder, or with holder "", those the phantom holds unlocked again.
func withLock(s model.State, events []string, holder string) model.State {
	if len(events) == 0 {
		return s
	}
	s.Rows = slices.Clone(s.Rows)
	for i, r := range s.Rows {
		if !slices.Contains(events, r.Event) {
			continue
		}
		switch {
		case holder != "" && r.LockedBy == "":
			s.Rows[i].LockedBy = holder
		case holder == "" && r.LockedBy == phantom:
			s.Rows[i].LockedBy = ""
		}
	}
	return s
}

// unlocked is s with event's row free of its lock: the committed row as a
// statement that does not wait for the lock reads it.
func unlocked(s model.State, event string) model.State {
	s.Rows = slices.Clone(s.Rows)
	for i, r := range s.Rows {
		if r.Event == event {
			s.Rows[i].LockedBy = ""
		}
	}
	return s
}

// subsets lists every subset of events (at most 2^6: a history has at
// most six takable rows).
func subsets(events []string) [][]string {
	if len(events) > maxSkippable {
		events = events[:maxSkippable]
	}
	out := [][]string{nil}
	for _, e := range events {
		for _, sub := range out {
			out = append(out, append(slices.Clone(sub), e))
		}
	}
	return out
}

// maxSkippable bounds the rows a claim may have skipped for concurrent
// statements: histories have a handful of events.
const maxSkippable = 6

// countedClaim is op sent to the claim its worker received. A protocol
// without a generation is sent the driver's count of the claims of the row
// it saw acknowledged (worker/drive.go); a claim, or a claim transaction's
// commit, whose reply was lost and which did commit is not counted, so the
// count falls short of the model's generation by one per such claim. Such
// a protocol fences by the handle its claim returned (a per-claim id), not
// by the count: when the worker holds no claim of the row at the count, op
// may be the worker's next claim of the row above it, the one the count
// stood for (Steps allows that and op as sent: a protocol that fences by
// the count, as testdata/correct/jobs_lease.sql does, refuses it). Issue
// 27: fixed/procrastinate.sql and fixed/solid_queue.sql.
func countedClaim(s model.State, op model.Op) model.Op {
	if op.Kind != model.Complete && op.Kind != model.Retry && op.Kind != model.Renew {
		return op
	}
	mine := func(gen int64) bool {
		want := model.Claim{Worker: op.Worker, Event: op.Event, Gen: gen}
		return slices.ContainsFunc(s.Claims, want.Same)
	}
	if mine(op.Gen) {
		return op
	}
	best := int64(-1)
	for _, c := range s.Claims {
		if c.Worker == op.Worker && c.Event == op.Event && c.Gen > op.Gen && (best < 0 || c.Gen < best) {
			best = c.Gen
		}
	}
	if best > 0 {
		op.Gen = best
	}
	return op
}
