package search

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/outboxlab/outboxlab/model"
)

// Minimize shrinks a caught counterexample further by replaying it
// (ShrinkProgram) and replays the result once more, so that the Catch and
// the harness's Program and Failure describe the smaller program, its
// faults included. A Catch whose failure came before its setup (no
// program) is returned as it is.
//
// A protocol can fail a program only sometimes (one whose claim has no
// ORDER BY returns rows in the order of the heap, which a vacuum changes
// between replays): a candidate that failed once may pass the replay that
// confirms it. Then Minimize goes back along the programs the shrinking
// kept, each smaller than the one before, to the last that still fails,
// for at most budget again; if none does, it keeps what rapid found.
func (h Searcher) Minimize(c Catch, budget time.Duration) Catch {
	if c.Failure == nil {
		return c
	}
	p := c.Recorded
	if p.Workers == nil {
		return c
	}
	start := time.Now()
	kept := h.shrink(p, c.Failure.Rule, start.Add(budget))
	for i := len(kept) - 1; i >= 0; i-- {
		if i < len(kept)-1 && time.Since(start) > 2*budget {
			break
		}
		v := h.confirm(kept[i], c.Failure.Rule)
		if os.Getenv("SHRINK_TRACE") != "" {
			fmt.Fprintf(os.Stderr, "confirm %d steps -> %v\n", len(kept[i].Steps), v != nil)
		}
		if v != nil {
			c.Program, c.Recorded, c.Failure = h.Program(), h.Recorded(), v
			c.Total += time.Since(start)
			return c
		}
	}
	return c // a flaky protocol: keep what rapid found
}

// confirm replays p and then the program as that replay recorded it (the
// steps a lenient replay skipped gone, the drain run afresh), strictly: the violation when
// both fail with rule, nil otherwise. Afterwards Program and Failure
// describe the strict replay.
func (h Searcher) confirm(p Program, rule string) *Violation {
	v, err := h.ReplayLenient(p)
	if err == nil && v != nil {
		v, err = h.Replay(h.Recorded())
	}
	if err != nil || v == nil || !SameRule(v.Rule, rule) {
		return nil
	}
	return v
}

// ShrinkProgram makes a failing program smaller, keeping each candidate
// whose replay still fails with the same rule. rapid shrinks the random
// draws, which for a machine with twenty actions takes a thousand checks
// and more; a replay costs only the steps it runs. The candidates: the
// faults taken out, all at once, by kind, then one by one (a lost request
// or reply, a stuck commit: the step then runs as it would have without
// it); fewer steps (delta debugging); the structural moves of moves.go
// (an event or a worker taken out with every step that names it, a claim
// or a claim transaction taken out, fixtures and outcomes made the
// simpler step that does the same, a split made whole, a worker's steps
// given to another, two steps apart taken out); the same steps with two
// events or two workers swapped, so that a later pass can drop the unused
// one; one or two steps fewer and a swap together; a claim transaction
// made an autocommit claim; fewer workers or events. Replays rebind
// (machine.Harness.ReplayRebinding): a step the machine could not have
// drawn at its point is skipped, an outcome follows its worker's latest
// claim of the row, and the steps after a claim that took another row
// than recorded follow the row it took. It stops at deadline with the
// smallest failing program so far.
func (h Searcher) ShrinkProgram(p Program, rule string, deadline time.Time) Program {
	kept := h.shrink(p, rule, deadline)
	return kept[len(kept)-1]
}

// shrink is ShrinkProgram, returning p and every program it kept after it,
// in order, each simpler than the one before.
//
// A kept program is the failing candidate as its replay ran it: the steps
// the lenient replay skipped, and those after the violation, gone, and
// each step's outcome what the protocol returned in the candidate, not in
// the program the candidate was made from. The moves that take out an
// event find its steps by their outcomes.
func (h Searcher) shrink(p Program, rule string, deadline time.Time) []Program {
	kept := []Program{p}
	replays := func(replay func(Program) (*Violation, error)) func(Program) bool {
		return func(c Program) bool {
			if time.Now().After(deadline) {
				return false
			}
			t0 := time.Now()
			v, err := replay(c)
			if os.Getenv("SHRINK_TRACE") != "" {
				fmt.Fprintf(os.Stderr, "replay %d steps -> %v %v in %v\n", len(c.Steps), v != nil && SameRule(v.Rule, rule), err, time.Since(t0).Round(time.Millisecond))
				if os.Getenv("SHRINK_TRACE") == "2" {
					fmt.Fprintf(os.Stderr, "%s\n%v\n", c, v)
				}
			}
			if err != nil || v == nil || !SameRule(v.Rule, rule) {
				return false
			}
			kept = append(kept, keptForm(c, h.Recorded()))
			return true
		}
	}
	fails := replays(h.ReplayRebinding)
	if _, ok := firstFailing(p, faultFrees(p), fails); ok {
		// A failure that needs no fault, or one kind of them only: what
		// is left replays without a restart's or a lost reply's cost.
		p = kept[len(kept)-1]
	}
	if _, ok := firstFailing(p, tails(p), replays(h.ReplayRebinding)); ok {
		// As the replay ran it: the generations rebound.
		p = kept[len(kept)-1]
	}
	for time.Now().Before(deadline) {
		before, n := p, len(kept)
		for len(p.Steps) > coarseSteps && holdsServerFault(p) {
			if _, ok := firstFailing(p, h.coarse(p), fails); !ok {
				break
			}
			p = kept[len(kept)-1]
			// Without another row's steps, the failure may need no
			// fault: what is left replays without a restart's cost.
			if _, ok := firstFailing(p, faultFrees(p), fails); ok {
				p = kept[len(kept)-1]
			}
		}
		ddmin(p.Steps, func(steps []Step) bool {
			return fails(Program{Workers: p.Workers, Events: p.Events, Steps: steps})
		})
		if len(kept) > n {
			// ddmin ends with the steps it last found failing.
			p = kept[len(kept)-1]
		}
		if _, ok := firstFailing(p, h.simpler(p), fails); !ok {
			break
		}
		p = kept[len(kept)-1]
		if !simplerThan(p, before) {
			// A candidate simpler only in its names that ran under
			// others: nothing gained, and trying again would find it again.
			break
		}
	}
	return kept
}

// coarseSteps is the length above which a round of a program that holds
// a server fault (a restart, crash, failover, flush or stall) first takes
// out whole events and workers (coarse), and after each the faults, before
// delta debugging. Such a program's replay costs a second and more (a
// restart's), and halving it fails replay after replay where its failure
// needs one row's steps spread over all of it; taking out another row's
// steps is one replay, and the fault the failure needed may go with them
// (rescue_revives_dead seed 1: 46 steps at the end of its budget before,
// the faults-off minimum, 6, now). Without a server fault, replays are
// cheap enough that delta debugging's halving gains more per second
// (session_lease_any_holder seed 5 shrank to 11 steps with this pass, to
// its minimum of 4 without).
const coarseSteps = 16

// coarse are p with one event or one worker taken out, with every step
// that names it (withoutEvent, withoutWorker).
func (h Searcher) coarse(p Program) []Program {
	var out []Program
	for _, e := range allEvents(p) {
		if c, ok := withoutEvent(p, e, h.Cfg.MinEvents); ok {
			out = append(out, c)
		}
	}
	for _, w := range p.Workers {
		if c, ok := withoutWorker(p, w, h.Cfg.MinWorkers); ok {
			out = append(out, c)
		}
	}
	return out
}

// holdsServerFault reports whether a step of p is a server fault's.
func holdsServerFault(p Program) bool {
	return slices.ContainsFunc(p.Steps, func(s Step) bool { return s.Op.Kind.ServerFault() })
}

// keptForm is the form of a failing candidate c that the shrinking keeps:
// the program as its replay ran (ran), whose outcomes are what the
// protocol returned and whose names are what the rebinding made them,
// unless the replay made it longer. Kept with the candidate's own
// outcomes, a claim recorded as taking e1 that took e2 misleads the
// moves that find an event's steps by their outcomes, and the strict
// replay that confirms the result fails on it.
func keptForm(c, ran Program) Program {
	if longerThan(ran, c) {
		return c
	}
	return ran
}

var eventNames = regexp.MustCompile(`\be[0-9]+\b`)

// SameRule reports whether two violations break the same rule, whichever
// events they name: "claim took e2 which is waiting for its backoff" is
// the rule "claim took e1 ..." broken on another row, and a shrinker that
// swaps events must be allowed to keep it.
func SameRule(a, b string) bool {
	return eventNames.ReplaceAllString(a, "e#") == eventNames.ReplaceAllString(b, "e#")
}

// firstFailing returns the first candidate simpler than p that fails.
func firstFailing(p Program, cands []Program, fails func(Program) bool) (Program, bool) {
	for _, c := range cands {
		if simplerThan(c, p) && fails(c) {
			return c, true
		}
	}
	return Program{}, false
}

// simplerThan orders programs by steps, then the faults that hit them,
// then what the program leaves for the drain to finish (an open claim
// transaction, a split section's open part: each costs the drain a
// step), then the split parts among the steps (a section run in parts is
// harder to read than one run whole), then workers, then events, then
// how far down the name lists the steps reach; every candidate must be
// simpler than the program it came from, so shrinking ends.
func simplerThan(p Program, q Program) bool {
	return slices.Compare(size(p), size(q)) < 0
}

// longerThan compares programs as simplerThan does, without the names.
func longerThan(p, q Program) bool {
	a, b := size(p), size(q)
	return slices.Compare(a[:len(a)-1], b[:len(b)-1]) > 0
}

// size is what simplerThan compares, most telling first; the names last.
func size(p Program) []int {
	parts := 0
	for _, s := range p.Steps {
		if s.Op.Part.Of > 0 {
			parts++
		}
	}
	return []int{len(p.Steps), faults(p), unfinished(p), parts, len(p.Workers), len(p.Events), nameRank(p)}
}

// unfinished counts the claim transactions p leaves open and the split
// sections whose last part it leaves to the drain.
func unfinished(p Program) int {
	n := 0
	for i, s := range p.Steps {
		switch {
		case s.Op.Kind == model.Begin:
			if txEnd(p, i) < 0 && !slices.ContainsFunc(p.Steps[i+1:], func(t Step) bool {
				return t.Op.Kind == model.Kill && t.Op.Worker == s.Op.Worker
			}) {
				n++
			}
		case opensSection(p, i):
			if parts := sectionParts(p, i); !p.Steps[parts[len(parts)-1]].Op.Part.Last() {
				n++ // the drain runs its last part
			}
		}
	}
	return n
}

// faults is how many of p's steps a fault hit (a lost request or reply, a
// stuck commit): each a field of its step, not a step.
func faults(p Program) int {
	n := 0
	for _, s := range p.Steps {
		if s.Fault != "" {
			n++
		}
	}
	return n
}

// faultFree is p with every fault taken out at once: each step's fault
// (a lost request or reply, a stuck commit) and each server fault's step
// (a restart, crash, failover, flush or stall); false when p has none.
//
// Most failures need no fault, and a program found with faults on may
// hold several: one candidate without them all costs one replay, where
// taking them out one by one or by delta debugging replays the program
// with its restarts again and again, a second and more each. Measured
// before this move (docs/evidence.md's faults table at 260216b), a budget
// of 20 s left rescue_revives_dead's seed 1 at 42 steps with four faults
// and retry_last_attempt_ready's at 20 with three.
func faultFree(p Program) (Program, bool) {
	var steps []Step
	for _, s := range p.Steps {
		if s.Op.Kind.ServerFault() {
			continue
		}
		s.Fault = ""
		steps = append(steps, s)
	}
	if len(steps) == len(p.Steps) && faults(p) == 0 {
		return p, false
	}
	return Program{Workers: p.Workers, Events: p.Events, Steps: steps}, true
}

// faultFrees are p with its faults taken out by kind: all of them
// (faultFree), then the server faults' steps only, then the steps' own
// faults only, each where it differs from p and from those before it. A
// failure found behind both kinds may need one kind and not the other;
// each candidate costs one replay, where delta debugging over a program
// that keeps its restarts and lost replies pays for them in every replay
// (a second and more each).
func faultFrees(p Program) []Program {
	var out []Program
	if q, ok := faultFree(p); ok {
		out = append(out, q)
	}
	var servers, steps []Step
	for _, s := range p.Steps {
		if !s.Op.Kind.ServerFault() {
			servers = append(servers, s)
		}
		s.Fault = ""
		steps = append(steps, s)
	}
	for _, c := range [][]Step{servers, steps} {
		q := Program{Workers: p.Workers, Events: p.Events, Steps: c}
		if simplerThan(q, p) && !slices.ContainsFunc(out, func(o Program) bool { return o.String() == q.String() }) {
			out = append(out, q)
		}
	}
	return out
}

// withoutFaults are p with one step's fault taken out, for each step a
// fault hit, last step first: the same step then runs as it would have
// without the fault, and a failure that did not need it keeps failing.
func withoutFaults(p Program) []Program {
	var out []Program
	for i := len(p.Steps) - 1; i >= 0; i-- {
		if p.Steps[i].Fault == "" {
			continue
		}
		c := slices.Clone(p.Steps)
		c[i].Fault = ""
		out = append(out, Program{Workers: p.Workers, Events: p.Events, Steps: c})
	}
	return out
}

func nameRank(p Program) int {
	n := 0
	for _, s := range p.Steps {
		n += nameNumber(s.Op.Worker) + nameNumber(s.Op.Event)
	}
	return n
}

// nameNumber is 3 for "w3" or "e3", 0 for "".
func nameNumber(name string) int {
	n, _ := strconv.Atoi(strings.TrimLeft(name, "ew"))
	return n
}

// simpler lists the candidates other than fewer steps, simplest first:
// every fault out at once (a program that needed one of its faults before
// delta debugging took steps out may need none after), then each alone.
func (h Searcher) simpler(p Program) []Program {
	out := faultFrees(p)
	out = append(out, withoutFaults(p)...)
	if len(p.Workers) > h.Cfg.MinWorkers {
		out = append(out, Program{Workers: p.Workers[:len(p.Workers)-1], Events: p.Events, Steps: p.Steps})
	}
	if len(p.Events) > max(h.Cfg.MinEvents, 1) {
		out = append(out, Program{Workers: p.Workers, Events: p.Events[:len(p.Events)-1], Steps: p.Steps})
	}
	out = append(out, h.structural(p)...)
	for i, s := range p.Steps {
		if s.Op.Kind != model.Begin || s.Op.Event != "" {
			continue
		}
		ended := false
		for j := i + 1; j < len(p.Steps); j++ {
			if o := p.Steps[j].Op; o.Worker == s.Op.Worker && (o.Kind == model.Commit || o.Kind == model.Rollback || o.Kind == model.Kill) {
				if o.Kind == model.Commit {
					c := slices.Clone(p.Steps)
					c[i].Op.Kind = model.ClaimOp
					out = append(out, Program{Workers: p.Workers, Events: p.Events, Steps: slices.Delete(c, j, j+1)})
				}
				ended = true
				break
			}
		}
		if !ended {
			// Left open for the drain to commit: the autocommit claim
			// leaves it nothing to end.
			c := slices.Clone(p.Steps)
			c[i].Op.Kind = model.ClaimOp
			out = append(out, Program{Workers: p.Workers, Events: p.Events, Steps: c})
		}
	}
	swaps := swaps(p)
	for _, swap := range swaps {
		out = append(out, swap(p))
	}
	// A step taken out often changes what later claims return, so that
	// the steps naming those rows need their names swapped as well: one
	// step or two fewer, with a swap.
	for i := range p.Steps {
		for j := i; j < len(p.Steps); j++ {
			fewer := slices.Delete(slices.Clone(p.Steps), j, j+1)
			if j > i {
				fewer = slices.Delete(fewer, i, i+1)
			}
			for _, swap := range swaps {
				out = append(out, swap(Program{Workers: p.Workers, Events: p.Events, Steps: fewer}))
			}
		}
	}
	return out
}

// swaps are the renamings of two events (enqueued at the setup or by a
// step) or two workers of p.
func swaps(p Program) []func(Program) Program {
	var out []func(Program) Program
	event := func(op *model.Op) *string { return &op.Event }
	worker := func(op *model.Op) *string { return &op.Worker }
	events := slices.Clone(p.Events)
	for _, s := range p.Steps {
		if s.Op.Kind == model.Enqueue {
			events = append(events, s.Op.Event)
		}
	}
	for j := len(events) - 1; j > 0; j-- {
		for i := 0; i < j; i++ {
			a, b := events[i], events[j]
			out = append(out, func(q Program) Program { return swapped(q, event, a, b) })
		}
	}
	for j := len(p.Workers) - 1; j > 0; j-- {
		for i := 0; i < j; i++ {
			a, b := p.Workers[i], p.Workers[j]
			out = append(out, func(q Program) Program { return swapped(q, worker, a, b) })
		}
	}
	return out
}

// swapped is p with the names a and b exchanged in the field of every step
// but an Enqueue (events are enqueued in order of their names).
func swapped(p Program, field func(*model.Op) *string, a, b string) Program {
	c := Program{Workers: p.Workers, Events: p.Events, Steps: slices.Clone(p.Steps)}
	for i := range c.Steps {
		if c.Steps[i].Op.Kind == model.Enqueue {
			continue
		}
		switch f := field(&c.Steps[i].Op); *f {
		case a:
			*f = b
		case b:
			*f = a
		}
	}
	return c
}

// ddmin is Zeller's delta debugging, complements only: remove ever smaller
// chunks of steps while the rest still fails, down to single steps.
func ddmin(steps []Step, fails func([]Step) bool) []Step {
	n := 2
	for len(steps) >= 2 {
		chunk := (len(steps) + n - 1) / n
		reduced := false
		for start := 0; start < len(steps); start += chunk {
			c := append(slices.Clone(steps[:start]), steps[min(start+chunk, len(steps)):]...)
			if fails(c) {
				steps, reduced = c, true
				n = max(n-1, 2)
				break
			}
		}
		if !reduced {
			if n >= len(steps) {
				break
			}
			n = min(2*n, len(steps))
		}
	}
	if len(steps) == 1 && fails(nil) {
		return nil
	}
	return steps
}
