package search

import (
	"slices"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/model"
)

// The shrinker's structural moves. Delta debugging takes steps out one
// chunk at a time, and a swap only renames; neither can take out a whole
// event or worker whose steps are spread over the program. Those programs
// were where shrinking stopped: in
//
//	setup: 2 workers (w1 w2), events e1 e2
//	  1. w1.Begin() -> claimed e1 gen=1
//	  2. w2.Claim() -> claimed e2 gen=1
//	     -- drain --
//	  3. w1.Rollback() -> ok
//	  4. Expire(e2) -> ok
//	  5. w1.Claim() -> claimed e1 gen=1
//	  6. w1.Complete(e1, gen=1) -> applied
//	  7. w1.Claim() -> empty   // model: claimed e2 gen=2
//
// the violation is about e2 alone, but no single step can go: without
// step 1, w2's claim takes e1 and the drain's claim takes e2 out of
// order, another rule; and the setup could lose only its last event, e2,
// the one the failure needs. Everything e1 is part of has to go at once,
// e2 named e1 after it.
//
// Each move works on the program as it last replayed (ShrinkProgram keeps
// that form), so a step's recorded outcome is what the protocol returned
// in that program: "w1.Begin() -> claimed e1" names e1.

// withoutEvent is p without the event e and every step that names it, in
// its op or in its outcome (a claim that returned it), together with the
// Commit or Rollback that ends a dropped Begin's transaction; the later
// events are renamed down, so that the names stay e1..eN in enqueue order
// as a replay requires. An event of the setup goes only while the setup
// keeps minEvents (and at least one).
func withoutEvent(p Program, e string, minEvents int) (Program, bool) {
	n := nameNumber(e)
	if n < 1 || n <= len(p.Events) && len(p.Events) <= max(minEvents, 1) {
		return Program{}, false
	}
	if n > len(p.Events) && !slices.ContainsFunc(p.Steps, func(s Step) bool {
		return s.Op.Kind == model.Enqueue && s.Op.Event == e
	}) {
		return Program{}, false
	}
	drop := make([]bool, len(p.Steps))
	for i, s := range p.Steps {
		if s.Op.Event == e || s.Out.Kind == model.Claimed && s.Out.Event == e {
			drop[i] = true
			if s.Op.Kind == model.Begin {
				if j := txEnd(p, i); j >= 0 {
					drop[j] = true
				}
			}
		}
	}
	down := func(name string) string {
		if k := nameNumber(name); k > n {
			return machine.EventName(k - 2)
		}
		return name
	}
	c := Program{Workers: p.Workers, Events: p.Events}
	if n <= len(p.Events) {
		c.Events = p.Events[:len(p.Events)-1]
	}
	for i, s := range p.Steps {
		if drop[i] {
			continue
		}
		if s.Op.Event != "" {
			s.Op.Event = down(s.Op.Event)
		}
		if s.Out.Event != "" {
			s.Out.Event = down(s.Out.Event)
		}
		c.Steps = append(c.Steps, s)
	}
	return c, true
}

// withoutWorker is p without every step the worker w takes, and without w
// itself while the setup keeps minWorkers: the later workers are renamed
// down (w3 becomes w2), as parseSetup requires. A worker's steps are as
// spread out as an event's, and one taken out alone may leave the others
// unreplayable (a Complete of a claim never made) or change what they do.
// With the setup at minWorkers, the steps alone go, when w has any.
func withoutWorker(p Program, w string, minWorkers int) (Program, bool) {
	n := nameNumber(w)
	if n < 1 || n > len(p.Workers) {
		return Program{}, false
	}
	c := Program{Workers: p.Workers, Events: p.Events}
	rename := len(p.Workers) > minWorkers
	if rename {
		c.Workers = p.Workers[:len(p.Workers)-1]
	}
	for _, s := range p.Steps {
		if s.Op.Worker == w {
			continue
		}
		if k := nameNumber(s.Op.Worker); rename && k > n {
			s.Op.Worker = machine.WorkerName(k - 2)
		}
		c.Steps = append(c.Steps, s)
	}
	if !rename && len(c.Steps) == len(p.Steps) {
		return Program{}, false
	}
	return c, true
}

// withEnqueueInSetup is p with its first Enqueue step made an event of
// the setup: the same row, there from the start, one step fewer. A
// program whose failure needs a second row found it by enqueueing
// ("Enqueue(e2); w1.Claim(); [drain] Expire(e1); w1.Claim() -> claimed
// e2"), and no other move turns that into the setup with two events.
// The events stay e1..eN: the first Enqueue step always names the event
// after the setup's.
func withEnqueueInSetup(p Program) (Program, bool) {
	i := slices.IndexFunc(p.Steps, func(s Step) bool { return s.Op.Kind == model.Enqueue })
	if i < 0 {
		return Program{}, false
	}
	c := Program{Workers: p.Workers, Events: append(slices.Clip(p.Events), p.Steps[i].Op.Event)}
	c.Steps = slices.Delete(slices.Clone(p.Steps), i, i+1)
	return c, true
}

// withoutTransactions are p with one claim transaction taken out: each
// Begin together with the Commit or Rollback that ends it. Delta
// debugging takes out neighbouring steps only, and a Begin taken out
// alone leaves its end unreplayable while the end taken out alone leaves
// the transaction open into the drain; the pair rarely stands together.
func withoutTransactions(p Program) []Program {
	var out []Program
	for i, s := range p.Steps {
		if s.Op.Kind != model.Begin {
			continue
		}
		j := txEnd(p, i)
		if j < 0 {
			continue
		}
		out = append(out, withoutTwo(p, i, j))
	}
	return out
}

// withoutTwo is p without its steps i and j, i < j.
func withoutTwo(p Program, i, j int) Program {
	steps := slices.Delete(slices.Clone(p.Steps), j, j+1)
	return Program{Workers: p.Workers, Events: p.Events, Steps: slices.Delete(steps, i, i+1)}
}

// withoutClaims are p with one committed claim taken out: an autocommit
// Claim, or a Begin with the Commit that ends it, together with every
// outcome sent with that claim (a Complete, Retry or Renew of its event
// and generation), and the later generations of its event renumbered
// down, since a row's generation counts the claims committed on it. A
// stale outcome is found behind a chain of claims and expiries
// ("Claim -> gen=1; Expire; Claim -> gen=2; Expire; Complete(gen=2)");
// without its first claim the later steps name a generation that no
// claim returns, and a replay skips them.
func withoutClaims(p Program) []Program {
	var out []Program
	for i, s := range p.Steps {
		if s.Out.Kind != model.Claimed || s.Op.Kind != model.ClaimOp && s.Op.Kind != model.Begin {
			continue
		}
		end := -1
		if s.Op.Kind == model.Begin {
			if end = txEnd(p, i); end < 0 || p.Steps[end].Op.Kind != model.Commit {
				continue // rolled back: it took no generation
			}
		}
		e, g := s.Out.Event, s.Out.Gen
		c := Program{Workers: p.Workers, Events: p.Events, Steps: slices.Clone(p.Steps[:i])}
		for j := i + 1; j < len(p.Steps); j++ {
			t := p.Steps[j]
			if j == end || t.Op.Event == e && t.Op.Gen == g && t.Op.Gen > 0 {
				continue
			}
			if t.Op.Event == e && t.Op.Gen > g {
				t.Op.Gen--
			}
			if t.Out.Kind == model.Claimed && t.Out.Event == e && t.Out.Gen > g {
				t.Out.Gen--
			}
			c.Steps = append(c.Steps, t)
		}
		out = append(out, c)
	}
	return out
}

// withExpiresForRetries are p with one applied Retry and the MakeDue that
// next makes its row due again made a single Expire of the claim's lease
// where the Retry was. Both give the row back to the next claim, and a
// stale outcome found as "Claim; Retry; MakeDue; Claim; Complete(gen=1)"
// needs only "Claim; Expire; Claim; Complete(gen=1)". The steps in
// between stay; a replay skips the Expire if they need the row's backoff.
// Under lease=session no fixture ends a lease: there the retrying
// worker's EndSession is the Expire (a replay skips it elsewhere).
func withExpiresForRetries(p Program) []Program {
	applied := func(s Step) bool { return s.Op.Kind == model.Retry && s.Out.Kind == model.Applied }
	return append(pairsAsExpire(p, applied, model.MakeDue, false),
		pairsAs(p, applied, model.MakeDue, false, func(s Step) Step {
			return Step{Op: model.Op{Kind: model.EndSession, Worker: s.Op.Worker}, Out: model.Outcome{Kind: model.OK}}
		})...)
}

// withExpiresForAges are p with an Age and the next Age of the same row
// made a single Expire, where the first was and where the second was: two
// Ages take 120% of the declared lease, which a lease of the declared
// length does not outlive, so a stale outcome found behind "Age; Age"
// needs only the expiry. The lease may have to stay live until the second
// ("Age; w1.Retry(e1) [1/2]; Age": the split's first part reads a live
// lease, and the expiry must come after it). The Age that shows a short
// lease stays: one Age alone is never replaced.
func withExpiresForAges(p Program) []Program {
	isAge := func(s Step) bool { return s.Op.Kind == model.Age }
	return append(pairsAsExpire(p, isAge, model.Age, false), pairsAsExpire(p, isAge, model.Age, true)...)
}

// pairsAsExpire are p with each step that first accepts and the next step
// of kind second on the same row made one Expire of that row, where the
// first step was, or with late where the second was (a pair of
// neighbours only where the first was: the two are the same program).
func pairsAsExpire(p Program, first func(Step) bool, second model.Kind, late bool) []Program {
	return pairsAs(p, first, second, late, func(s Step) Step {
		return Step{Op: model.Op{Kind: model.Expire, Event: s.Op.Event}, Out: model.Outcome{Kind: model.OK}}
	})
}

// pairsAs is pairsAsExpire with the step put in the pair's place made
// from the first step by as.
func pairsAs(p Program, first func(Step) bool, second model.Kind, late bool, as func(Step) Step) []Program {
	var out []Program
	for i, s := range p.Steps {
		if !first(s) {
			continue
		}
		j := slices.IndexFunc(p.Steps[i+1:], func(t Step) bool { return t.Op.Kind == second && t.Op.Event == s.Op.Event })
		if j < 0 || late && j == 0 {
			continue
		}
		at, gone := i, i+1+j
		if late {
			at, gone = i+1+j, i
		}
		c := Program{Workers: p.Workers, Events: p.Events, Steps: slices.Clone(p.Steps)}
		c.Steps[at] = as(s)
		c.Steps = slices.Delete(c.Steps, gone, gone+1)
		out = append(out, c)
	}
	return out
}

// txEnd is the index of the Commit or Rollback that ends the transaction
// the Begin at i opened, -1 if it stays open or a Kill ends it (the Kill
// stays: it may be what the failure needs).
func txEnd(p Program, i int) int {
	w := p.Steps[i].Op.Worker
	for j := i + 1; j < len(p.Steps); j++ {
		switch o := p.Steps[j].Op; {
		case o.Worker != w:
		case o.Kind == model.Commit || o.Kind == model.Rollback:
			return j
		case o.Kind == model.Kill:
			return -1
		}
	}
	return -1
}

// structural are the candidates of the moves above: every worker and
// every event taken out with its steps, the first enqueue made part of
// the setup, every claim transaction taken out, every committed claim
// taken out with its outcomes, every retry made due again, every pair
// of Ages of one row made an expiry, every Begin(expire e) made an
// Expire(e), every expiry and the rescue after it made the owner's retry
// (where the owner never reports on that claim again), every split step
// made whole, every worker's steps given to another, every step given to another worker,
// and every pair of steps apart taken out.
func (h Searcher) structural(p Program) []Program {
	var out []Program
	for _, w := range p.Workers {
		if c, ok := withoutWorker(p, w, h.Cfg.MinWorkers); ok {
			out = append(out, c)
		}
	}
	for _, e := range allEvents(p) {
		if c, ok := withoutEvent(p, e, h.Cfg.MinEvents); ok {
			out = append(out, c)
		}
	}
	if c, ok := withEnqueueInSetup(p); ok {
		out = append(out, c)
	}
	out = append(out, withoutTransactions(p)...)
	out = append(out, withoutClaims(p)...)
	out = append(out, withExpiresForRetries(p)...)
	out = append(out, withExpiresForAges(p)...)
	out = append(out, withExpiresForExpiringBegins(p)...)
	out = append(out, withRetriesForRescues(p)...)
	out = append(out, withSplitsWhole(p)...)
	out = append(out, withWorkersMerged(p)...)
	out = append(out, withStepsGiven(p)...)
	return append(out, withoutPairs(p)...)
}

// allEvents are the setup's events and those the steps enqueue, in order.
func allEvents(p Program) []string {
	events := slices.Clone(p.Events)
	for _, s := range p.Steps {
		if s.Op.Kind == model.Enqueue {
			events = append(events, s.Op.Event)
		}
	}
	return events
}

// withWorkersMerged are p with every step of one worker given to another
// of a lower number, for each such pair: one process doing what two did.
// A program found with two workers often needs only one ("w1.Claim;
// Expire; w2.Claim; w2.Complete; w1.Complete -> applied" breaks "complete
// applied to a SENT row", which "w1.Claim; w1.Complete; w1.Complete"
// breaks too), and no move above reaches it: a swap renames both workers,
// and taking out either's steps loses the claim the other's outcome
// follows. Merged, the outcomes follow the worker's latest claim of the
// row (a rebinding replay), and delta debugging can then take out the
// steps the merge made idle.
func withWorkersMerged(p Program) []Program {
	var out []Program
	for j := len(p.Workers) - 1; j > 0; j-- {
		for i := 0; i < j; i++ {
			to, from := p.Workers[i], p.Workers[j]
			c := Program{Workers: p.Workers, Events: p.Events, Steps: slices.Clone(p.Steps)}
			moved := false
			for k := range c.Steps {
				if c.Steps[k].Op.Worker == from {
					c.Steps[k].Op.Worker, moved = to, true
				}
			}
			if moved {
				out = append(out, c)
			}
		}
	}
	return out
}

// withStepsGiven are p with one step given to a worker of a lower number,
// for each step and each such worker, last step first. A late outcome
// found as another worker's ("w2.Complete(e1, gen=2)" after w1's claim
// and an expiry) may be the rule broken by one worker alone, while the
// rest of the other worker's steps must stay where they are; merging
// whole workers moves too much, a swap renames too much.
func withStepsGiven(p Program) []Program {
	var out []Program
	for k := len(p.Steps) - 1; k >= 0; k-- {
		from := nameNumber(p.Steps[k].Op.Worker)
		for i := 0; i < from-1 && i < len(p.Workers); i++ {
			c := Program{Workers: p.Workers, Events: p.Events, Steps: slices.Clone(p.Steps)}
			c.Steps[k].Op.Worker = p.Workers[i]
			out = append(out, c)
		}
	}
	return out
}

// withSplitsWhole are p with one split step's parts made the whole step,
// once where its last part was (at the program's end when the drain ran
// its last part) and once where its first was: the section run in one go.
// A failure found through a split claim is often a failure of any claim
// ("claim took e1 past its attempt budget" needs a fourth claim, not a
// split one), and the parts go only together: a last part without its
// first is not replayable, a first without its last leaves the section
// open into the drain, which ends it there.
func withSplitsWhole(p Program) []Program {
	var out []Program
	for i := range p.Steps {
		if !opensSection(p, i) {
			continue
		}
		parts := sectionParts(p, i)
		last := p.Steps[parts[len(parts)-1]]
		whole := Step{Op: last.Op.Whole(), Out: last.Out}
		at := len(p.Steps) // the drain ran the last part
		if last.Op.Part.Last() {
			at = parts[len(parts)-1]
		}
		for _, at := range []int{at, i} {
			var steps []Step
			for k, t := range p.Steps {
				if k == at {
					steps = append(steps, whole)
				}
				if !slices.Contains(parts, k) {
					steps = append(steps, t)
				}
			}
			if at == len(p.Steps) {
				steps = append(steps, whole)
			}
			out = append(out, Program{Workers: p.Workers, Events: p.Events, Steps: steps})
		}
	}
	return out
}

// withoutPairs are p with two steps taken out, for each pair that is not
// next to each other, while p is short enough for its square to be cheap:
// delta debugging takes out one step or a run of neighbours, and a failure
// often keeps a pair that only goes together (a fixture and the claim it
// made possible, with the steps that need neither in between).
func withoutPairs(p Program) []Program {
	const most = 16
	if len(p.Steps) > most {
		return nil
	}
	var out []Program
	for j := len(p.Steps) - 1; j > 1; j-- {
		for i := j - 2; i >= 0; i-- {
			out = append(out, withoutTwo(p, i, j))
		}
	}
	return out
}

// withExpiresForExpiringBegins are p with one Begin(expire e) made an
// Expire(e), and its transaction's Commit or Rollback taken out. The
// expiring Begin is how a reclaim gets in under a waiting outcome; a
// stale outcome it shows ("stale owner's complete applied") is often
// shown as well by the expiry alone, in a program whose drain has no
// transaction to end.
func withExpiresForExpiringBegins(p Program) []Program {
	var out []Program
	for i, s := range p.Steps {
		if s.Op.Kind != model.Begin || s.Op.Event == "" {
			continue
		}
		steps := slices.Clone(p.Steps)
		steps[i] = Step{Op: model.Op{Kind: model.Expire, Event: s.Op.Event}, Out: model.Outcome{Kind: model.OK}}
		if j := txEnd(p, i); j >= 0 {
			steps = slices.Delete(steps, j, j+1)
		}
		out = append(out, Program{Workers: p.Workers, Events: p.Events, Steps: steps})
	}
	return out
}

// withRetriesForRescues are p with an Expire of a row and the next Rescue
// made one Retry of the row, where the Expire was, by the worker whose
// claim of it came last: the owner giving the row back does what the
// rescue of its expired lease does (the row READY, or DEAD on its last
// attempt), in one step. The inverse of withExpiresForRetries, for a
// failure found through the rescue that the owner's own retry shows as
// well ("rescue left an exhausted event alive" after "Claim; Expire;
// Rescue; MakeDue; Claim" needs only "Claim; Retry; MakeDue; Claim").
//
// Only where the owner never reports on that claim afterwards: a later
// complete, retry or renew of it is a stale outcome, and the rescue is
// what made it stale. Made the owner's own retry, River's rescuer path
// (claim, expire, rescue, claim again, the first claim's complete)
// becomes one worker reporting twice, a path River's executor never
// takes, and the counterexample shows a different bug.
func withRetriesForRescues(p Program) []Program {
	var out []Program
	for i, s := range p.Steps {
		if s.Op.Kind != model.Expire {
			continue
		}
		j := slices.IndexFunc(p.Steps[i+1:], func(t Step) bool { return t.Op.Kind == model.Rescue && t.Op.Part.Of == 0 })
		if j < 0 {
			continue
		}
		owner, gen := lastClaimOf(p, i, s.Op.Event)
		if owner < 0 || reportsAfter(p, i, p.Steps[owner].Op.Worker, s.Op.Event, gen) {
			continue
		}
		c := Program{Workers: p.Workers, Events: p.Events, Steps: slices.Delete(slices.Clone(p.Steps), i+1+j, i+2+j)}
		c.Steps[i] = Step{Op: model.Op{Kind: model.Retry, Worker: p.Steps[owner].Op.Worker, Event: s.Op.Event, Gen: gen}, Out: model.Outcome{Kind: model.Applied}}
		out = append(out, c)
	}
	return out
}

// lastClaimOf is the index of the last step before i that granted event
// to a worker, and the generation it granted; -1 if none did.
func lastClaimOf(p Program, i int, event string) (int, int64) {
	for k := i - 1; k >= 0; k-- {
		if p.Steps[k].Op.Worker == "" {
			continue
		}
		for _, g := range p.Steps[k].Out.Grants() {
			if g.Event == event {
				return k, g.Gen
			}
		}
	}
	return -1, 0
}

// reportsAfter reports whether worker may send an outcome (a complete,
// retry or renew, whole or a part) for its claim of event at gen after
// step i: any outcome for event, but one whose line shows another
// generation (a later claim's).
func reportsAfter(p Program, i int, worker, event string, gen int64) bool {
	for _, t := range p.Steps[i+1:] {
		if t.Op.Worker != worker || t.Op.Event != event {
			continue
		}
		switch t.Op.Kind {
		case model.Complete, model.Retry, model.Renew:
			if t.Op.Gen == 0 || t.Op.Gen == gen {
				return true
			}
		}
	}
	return false
}

// opensSection reports whether step i is the first part of a split
// section: a part before the last ([1/2], or [2/3] when the split came
// after two statements) that no open part of the same holder's section
// comes before.
func opensSection(p Program, i int) bool {
	s := p.Steps[i].Op
	if !s.Part.First() {
		return false
	}
	for k := i - 1; k >= 0; k-- {
		if t := p.Steps[k].Op; t.Part.Of > 0 && t.Kind == s.Kind && t.Holder() == s.Holder() {
			return t.Part.Last()
		}
	}
	return true
}

// sectionParts are the indices of the parts of the split section that
// step i opens, in order: i, then each later part of the same holder's
// section up to its last part, which the drain may have run instead.
func sectionParts(p Program, i int) []int {
	s := p.Steps[i].Op
	parts := []int{i}
	for j := i + 1; j < len(p.Steps); j++ {
		t := p.Steps[j].Op
		if t.Kind == s.Kind && t.Holder() == s.Holder() && t.Part.Of == s.Part.Of {
			parts = append(parts, j)
			if t.Part.Last() {
				break
			}
		}
	}
	return parts
}
