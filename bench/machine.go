package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/search"
	"github.com/outboxlab/outboxlab/sut"
	"pgregory.net/rapid"
)

// Steps is what a run of the state machine cost.
type Steps struct {
	// PerStep is the median over checks of a check's wall time divided by
	// its steps: reset, actions, model and row comparisons after every
	// step, and the drain, all included.
	PerStep time.Duration
	// SQLShare is the fraction of the checks' wall time spent waiting on
	// PostgreSQL (worker statements with their pipe, the harness's reads,
	// fixtures and resets).
	SQLShare float64
	Checks   int
	Steps    int
}

// StateMachine runs checks of an installed protocol, after one untimed
// check that spawns the worker processes, so the figures are those of a
// long run.
func StateMachine(srv *pgserver.Server, inst *sut.Instance, cfg machine.Config, checks int, seed uint64) (Steps, error) {
	h := machine.New(srv, inst, cfg)
	defer h.Close()
	if err := RunChecks(h, 1, seed, h.Check); err != nil {
		return Steps{}, fmt.Errorf("warm-up: %w", err)
	}
	c0, s0, e0 := h.Stats()
	q0 := h.SQLTime()
	var perStep []float64
	prop := func(t *rapid.T) {
		_, s, e := h.Stats()
		defer func() {
			_, s1, e1 := h.Stats()
			if s1 > s {
				perStep = append(perStep, float64(e1-e)/float64(s1-s))
			}
		}()
		h.Check(t)
	}
	if err := RunChecks(h, checks, seed+1, prop); err != nil {
		return Steps{}, err
	}
	c1, s1, e1 := h.Stats()
	elapsed := e1 - e0
	if elapsed <= 0 || s1 == s0 {
		return Steps{}, fmt.Errorf("no steps ran")
	}
	return Steps{
		PerStep:  time.Duration(medianFloat(perStep)),
		SQLShare: float64(h.SQLTime()-q0) / float64(elapsed),
		Checks:   c1 - c0,
		Steps:    s1 - s0,
	}, nil
}

// RunChecks runs n checks of prop (h.Check, or a wrapper of it) from seed
// (0: a random seed), and fails if one of them does.
func RunChecks(h *machine.Harness, n int, seed uint64, prop func(*rapid.T)) error {
	return withRapid(n, seed, func(flags map[string]string) error { return runChecks(h, prop, flags) })
}

// runChecks is one rapid.Check of prop, under withRapid's flags.
func runChecks(h *machine.Harness, prop func(*rapid.T), flags map[string]string) error {
	tb := search.NewRecordingTB("outboxlab-bench")
	tb.Flags = flags
	if !check(tb, prop) {
		return fmt.Errorf("state machine failed on %s: %s", h.Inst.Proto.Name, firstLine(tb.Errors()))
	}
	return nil
}

// Counterexample is one search of a failing protocol, timed from the start
// of rapid.Check.
type Counterexample struct {
	// Find is the time to the end of the first failing check.
	Find time.Duration
	// Minimal is the time from there until the search returned its minimal
	// counterexample (search.Searcher.Search: replay-based shrinking, which stops
	// when no smaller program fails).
	Minimal time.Duration
	Steps   int // of the minimal program
}

// FindAndShrink runs the state machine on a protocol that must fail (the
// baseline) from seed, as `outboxlab check` would: a fresh harness, whose
// first check spawns its workers, then search, then shrink.
func FindAndShrink(srv *pgserver.Server, inst *sut.Instance, cfg machine.Config, seed uint64) (Counterexample, error) {
	h := machine.New(srv, inst, cfg)
	defer h.Close()
	var out Counterexample
	err := withRapid(100, seed, func(flags map[string]string) error {
		start := time.Now()
		c := search.Searcher{Harness: h, Flags: flags}.Search("outboxlab-bench", 0)
		total := time.Since(start)
		switch {
		case !c.Caught:
			return fmt.Errorf("%s passed 100 checks from seed %d: no counterexample", inst.Proto.Name, seed)
		case c.Failure == nil:
			return fmt.Errorf("%s failed without a violation: %s", inst.Proto.Name, firstLine(c.Report))
		}
		out = Counterexample{Find: c.ToFind, Minimal: total - c.ToFind, Steps: machine.CountSteps(c.Program)}
		return nil
	})
	return out, err
}

// Throughput runs the state machine on one installed protocol per
// goroutine (each its own schema, harness and workers) for about d, or
// until n checks have run in all (0: no limit), and returns the checks
// completed per second of wall time, all goroutines together. Each harness
// runs one untimed check first.
func Throughput(ctx context.Context, srv *pgserver.Server, insts []*sut.Instance, cfg machine.Config, d time.Duration, n int) (float64, error) {
	hs := make([]*machine.Harness, len(insts))
	for i, inst := range insts {
		hs[i] = machine.New(srv, inst, cfg)
		defer hs[i].Close()
		if err := RunChecks(hs[i], 1, uint64(i+1), hs[i].Check); err != nil {
			return 0, fmt.Errorf("warm-up: %w", err)
		}
	}
	var done atomic.Int64
	var elapsed time.Duration
	// One check per rapid.Check, each from a random seed: the run ends
	// within one check of its budget.
	err := withRapid(1, 0, func(flags map[string]string) error {
		errs := make([]error, len(hs))
		var wg sync.WaitGroup
		start := time.Now()
		more := func() bool {
			return (d == 0 || time.Since(start) < d) && (n == 0 || done.Load() < int64(n)) && ctx.Err() == nil
		}
		for i, h := range hs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for more() {
					if errs[i] = runChecks(h, h.Check, flags); errs[i] != nil {
						return
					}
					done.Add(1)
				}
			}()
		}
		wg.Wait()
		elapsed = time.Since(start)
		if err := errors.Join(errs...); err != nil {
			return err
		}
		return ctx.Err()
	})
	if err != nil {
		return 0, err
	}
	return float64(done.Load()) / elapsed.Seconds(), nil
}
