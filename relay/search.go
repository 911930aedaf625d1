package relay

import (
	"fmt"
	"time"
)

// Result is a search's verdict over a budget of programs.
type Result struct {
	Checks   int // programs run (up to and including a failing one)
	Steps    int // their steps, the drains' excluded
	Coverage map[string]int
	// Failure is the first failing program, shrunk, with its outcome;
	// FailingSeed reproduces it with --checks 1.
	Failure     *Outcome
	FailingSeed uint64
}

// CheckSeed is the seed of check i of a search from seed: far apart for
// neighbouring seeds, and the failing check's seed reproduces it alone
// (check 0 of a search from seed s is s).
func CheckSeed(seed uint64, i int) uint64 { return seed + uint64(i)<<32 }

// Search runs checks programs, program i drawn from CheckSeed(seed, i), and stops at
// the first that breaks a property; it then shrinks that program by
// replaying it with steps left out, for at most shrink.
func (h *Harness) Search(seed uint64, checks int, shrink time.Duration) (Result, error) {
	res := Result{Coverage: map[string]int{}}
	for i := range checks {
		p := Generate(CheckSeed(seed, i), h.Cfg.MaxWorkers, h.Cfg.MaxEvents, h.Cfg.Steps, h.Cfg.Faults)
		out, err := h.Run(p)
		if err != nil {
			return res, fmt.Errorf("check %d (seed %d): %w", i+1, CheckSeed(seed, i), err)
		}
		res.Checks++
		res.Steps += len(p.Steps)
		for k, v := range out.Coverage {
			res.Coverage[k] += v
		}
		if out.Failed() {
			res.FailingSeed = CheckSeed(seed, i)
			_, out = h.Shrink(p, out, shrink)
			res.Failure = &out
			return res, nil
		}
	}
	return res, nil
}

// Shrink removes steps one at a time, then a worker or an event, keeping
// each removal after which the program still breaks the same first rule,
// until no single removal does or the time is up. A step whose precondition a removal took away
// is skipped when replayed, so every candidate runs.
func (h *Harness) Shrink(p Program, out Outcome, limit time.Duration) (Program, Outcome) {
	rule := out.Violations[0].Rule
	deadline := time.Now().Add(limit)
	try := func(q Program) bool {
		got, err := h.Run(q)
		if err != nil || !got.Broke(rule) {
			return false
		}
		p, out = q, got
		return true
	}
	for changed := true; changed && time.Now().Before(deadline); {
		changed = false
		for i := len(p.Steps) - 1; i >= 0 && time.Now().Before(deadline); i-- {
			changed = try(p.Without(i)) || changed
		}
		for _, q := range p.Smaller() {
			if time.Now().Before(deadline) && try(q) {
				changed = true
				break // p changed: its smaller programs are new
			}
		}
	}
	// Put the rule the search found first.
	for i, v := range out.Violations {
		if v.Rule == rule {
			out.Violations[0], out.Violations[i] = out.Violations[i], out.Violations[0]
			break
		}
	}
	return p, out
}
