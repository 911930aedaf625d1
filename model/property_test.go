package model

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

var (
	workers = []string{"w1", "w2", "w3"}
	events  = []string{"e1", "e2", "e3", "e4", "e5"}
	kinds   = []Kind{Enqueue, ClaimOp, Begin, Commit, Rollback, Complete, Retry, Renew,
		Expire, MakeDue, Age, Pause, Resume, Kill, Respawn, Restart, Rescue}
)

// TestModelProperties runs random programs on the model alone and holds
// every transition, including those of a lost connection, to the
// invariants the real suite checks, plus the model's own purity.
func TestModelProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := NewWith(drawPolicy(t))
		steps := rapid.IntRange(1, 400).Draw(t, "steps")
		for range steps {
			op := drawOp(t, s)
			lost := rapid.IntRange(0, 9).Draw(t, "lost") == 0
			checkPure(t, s, op)
			ts := transitions(s, op, lost)
			if (s.Precondition(op) == nil) != (len(ts) > 0) {
				t.Fatalf("%s: precondition %v but %d transitions", op, s.Precondition(op), len(ts))
			}
			for _, tr := range ts {
				checkTransition(t, s, op, tr, ts)
			}
			if len(ts) > 0 {
				s = ts[rapid.IntRange(0, len(ts)-1).Draw(t, "pick")].Next
			}
		}
	})
}

// drawPolicy draws a protocol's directives: version 1 and every shape of
// version 2 (batches, the lenient policy, an attempt budget, delete on
// complete, a rescue section), alone and together.
func drawPolicy(t *rapid.T) Policy {
	return Policy{
		Order:       rapid.SampledFrom([]Order{FIFO, Any}).Draw(t, "order"),
		Batch:       rapid.IntRange(1, 3).Draw(t, "batch"),
		Lenient:     rapid.Bool().Draw(t, "lenient"),
		MaxAttempts: rapid.IntRange(0, 3).Draw(t, "max_attempts"),
		Delete:      rapid.Bool().Draw(t, "delete"),
		Rescue:      rapid.Bool().Draw(t, "rescue"),
		// A profile's relaxed searches: any set of properties.
		Relax: Property(rapid.IntRange(0, 1<<len(Properties)-1).Draw(t, "relax")),
	}
}

// drawOp draws an op. Complete, retry and renew mostly act on a claim some
// worker received, so both stale and current owners act.
func drawOp(t *rapid.T, s State) Op {
	op := Op{Kind: rapid.SampledFrom(kinds).Draw(t, "kind")}
	sh := shapes[op.Kind]
	if sh.worker {
		op.Worker = rapid.SampledFrom(workers).Draw(t, "worker")
	}
	if sh.event {
		op.Event = rapid.SampledFrom(events).Draw(t, "event")
	}
	if sh.gen {
		if len(s.Claims) > 0 && rapid.IntRange(0, 3).Draw(t, "received") > 0 {
			c := rapid.SampledFrom(s.Claims).Draw(t, "claim")
			op.Worker, op.Event, op.Gen = c.Worker, c.Event, c.Gen
		} else {
			op.Gen = rapid.Int64Range(0, 4).Draw(t, "gen")
		}
	}
	return op
}

// transitions is Step, or with lost the states of a connection lost around op.
func transitions(s State, op Op, lost bool) []Transition {
	if !lost {
		return s.Step(op)
	}
	var ts []Transition
	for _, next := range s.Ambiguous(op) {
		ts = append(ts, Transition{Out: Outcome{Kind: Unknown}, Next: next})
	}
	return ts
}

// checkPure: Step and Ambiguous are deterministic, and writing into the
// states they return does not reach their receiver.
func checkPure(t *rapid.T, s State, op Op) {
	before := s.Key()
	a, b := s.Step(op), s.Step(op)
	if !slices.Equal(keys(nextStates(a)), keys(nextStates(b))) || !slices.Equal(outcomes(a), outcomes(b)) {
		t.Fatalf("%s: Step is not deterministic", op)
	}
	for _, next := range append(nextStates(a), s.Ambiguous(op)...) {
		scribble(next)
	}
	if s.Key() != before {
		t.Fatalf("%s: Step or Ambiguous changed its receiver:\n%s\n%s", op, before, s.Key())
	}
}

func scribble(s State) {
	for i := range s.Rows {
		s.Rows[i] = Row{Event: "x"}
	}
	for i := range s.Pending {
		s.Pending[i] = PendingClaim{Worker: "x"}
	}
	for i := range s.Claims {
		s.Claims[i] = Claim{Worker: "x"}
	}
}

func checkTransition(t *rapid.T, s State, op Op, tr Transition, allowed []Transition) {
	next, step := tr.Next, FormatStep(op, tr.Out)
	for _, hasGen := range []bool{true, false} {
		if err := CheckRows(next.View(hasGen)); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if err := CheckChange(s.Policy, s.View(hasGen), next.View(hasGen), op, tr.Out); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if m := Match([]State{next, next}, next.View(hasGen), hasGen); len(m) != 1 || m[0].Key() != next.Key() {
			t.Fatalf("%s: Match of its own view kept %d states", step, len(m))
		}
	}
	if err := Explain(s, op, tr.Out, allowed); err != nil {
		t.Fatalf("%s: an allowed outcome was explained: %v", step, err)
	}
	if gotOp, gotOut, err := ParseStep(step); err != nil || gotOp != op || !gotOut.Equal(tr.Out) {
		t.Fatalf("%s: does not parse back: %v", step, err)
	}
	if !slices.Equal(next.Claims[:min(len(s.Claims), len(next.Claims))], s.Claims) || len(next.Claims) > len(s.Claims)+s.Policy.batch() {
		t.Fatalf("%s: claims are only appended, at most a batch per step", step)
	}
	checkOwners(t, next, step)
	checkLocks(t, next, step)
	checkBudget(t, s, next, op, step)
}

// checkBudget: with max_attempts, no row is claimed more often than the
// budget, a row is DEAD only once it is spent, DEAD never changes, and
// without done=delete no row ever leaves; with it, only by a complete.
func checkBudget(t *rapid.T, s, next State, op Op, step string) {
	if s.Policy.relaxed(AttemptBudget) || s.Policy.relaxed(Terminal) || s.Policy.relaxed(Fencing) {
		return
	}
	for _, r := range next.Rows {
		if s.Policy.MaxAttempts > 0 && r.Gen > int64(s.Policy.MaxAttempts) {
			t.Fatalf("%s: %s claimed %d times, max_attempts=%d", step, r.Event, r.Gen, s.Policy.MaxAttempts)
		}
		if r.Status == Dead && !s.exhausted(r) {
			t.Fatalf("%s: %s DEAD after %d attempts", step, r.Event, r.Gen)
		}
	}
	for _, r := range s.Rows {
		i := next.row(r.Event)
		switch {
		case i < 0 && (!s.Policy.Delete || op.Kind != Complete || op.Event != r.Event):
			t.Fatalf("%s: %s left the state", step, r.Event)
		case i >= 0 && r.Status == Dead && next.Rows[i].Status != Dead:
			t.Fatalf("%s: DEAD %s came back as %s", step, r.Event, next.Rows[i].Status)
		}
	}
}

// checkOwners: at most one received claim per row is current.
func checkOwners(t *rapid.T, s State, step string) {
	current := map[string]int{}
	for _, c := range s.Claims {
		if s.IsCurrent(c) {
			if current[c.Event]++; current[c.Event] > 1 {
				t.Fatalf("%s: two current claims on %s", step, c.Event)
			}
		}
	}
}

// checkLocks: open claims are sorted by worker, one per worker, and lock
// exactly the rows they claimed, at the next generation.
func checkLocks(t *rapid.T, s State, step string) {
	locks := 0
	for i, p := range s.Pending {
		if i > 0 && s.Pending[i-1].Worker >= p.Worker {
			t.Fatalf("%s: pending not sorted by worker: %v", step, s.Pending)
		}
		for _, g := range p.grants() {
			locks++
			r := s.Rows[s.row(g.Event)]
			if r.LockedBy != p.Worker || g.Gen != r.Gen+1 {
				t.Fatalf("%s: %v does not hold %+v", step, p, r)
			}
		}
		for _, e := range p.Bury {
			locks++
			if r := s.Rows[s.row(e)]; r.LockedBy != p.Worker || !s.exhausted(r) && !s.Policy.relaxed(AttemptBudget) {
				t.Fatalf("%s: %v does not hold the exhausted %+v", step, p, r)
			}
		}
	}
	for _, r := range s.Rows {
		if r.LockedBy != "" {
			locks--
		}
	}
	if locks != 0 {
		t.Fatalf("%s: a row is locked by no open claim: %s", step, s.Key())
	}
}
