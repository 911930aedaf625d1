package search

import (
	"time"

	"github.com/outboxlab/outboxlab/machine"
	"pgregory.net/rapid"
)

// Catch is what one rapid.Check of a harness found, measured: whether it
// failed, how many checks and how much wall time it took to find the first
// failure, and the shrunk counterexample.
type Catch struct {
	Caught  bool
	Checks  int           // checks run up to and including the first failing one (all of them if none failed)
	ToFind  time.Duration // wall time until the first failing check ended
	Total   time.Duration // the whole rapid.Check, shrinking included
	Program []string      // the last program run, as printed: after a failure, the shrunk counterexample
	// Recorded is Program as a value (machine.Harness.Recorded): what the
	// shrinking replays, the report draws and --json carries.
	Recorded Program
	Failure  *Violation // the broken rule of the shrunk counterexample
	Report   string     // what rapid reported: the seed and how to reproduce
}

// Steps is the length of the program: its numbered step lines, the drain's
// steps included and the setup line not.
func (c Catch) Steps() int { return CountSteps(c.Program) }

// Measure runs rapid.Check of check (h.Check, or an IsolatedCheck of h)
// with a recording TB named name and measures it, under rapid's flags as
// the command line and the test set them.
func Measure(name string, h *machine.Harness, check func(*rapid.T)) Catch {
	return MeasureWith(name, h, check, nil)
}

// MeasureWith is Measure under the rapid flags flags sets over those
// (WithRapidFlags).
func MeasureWith(name string, h *machine.Harness, check func(*rapid.T), flags map[string]string) Catch {
	tb := NewRecordingTB(name)
	tb.Flags = flags
	checksBefore, _, _ := h.Stats()
	start := time.Now()
	var c Catch
	found := false
	var firstProgram []string
	var firstRecorded Program
	var firstFailure *Violation
	prop := func(t *rapid.T) {
		defer func() {
			if !found && h.Failure() != nil {
				found = true
				c.ToFind = time.Since(start)
				n, _, _ := h.Stats()
				c.Checks = n - checksBefore
				firstProgram, firstRecorded, firstFailure = h.Program(), h.Recorded(), h.Failure()
			}
		}()
		check(t)
	}
	passed := tb.RunProperty(prop)
	c.Total = time.Since(start)
	c.Caught = !passed
	c.Program, c.Recorded = h.Program(), h.Recorded()
	c.Failure = h.Failure()
	c.Report = tb.Errors()
	if c.Caught && c.Failure == nil && firstFailure != nil {
		// A protocol that does not fail the same way twice (rapid calls it
		// flaky: heap order, say) failed all the same: keep the first.
		c.Program, c.Recorded, c.Failure = firstProgram, firstRecorded, firstFailure
	}
	if !found {
		n, _, _ := h.Stats()
		c.Checks = n - checksBefore
	}
	return c
}

// RunProperty is RunCheck for any property.
func (tb *RecordingTB) RunProperty(prop func(*rapid.T)) (passed bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(failNow); !ok {
				panic(r)
			}
		}
		passed = !tb.Failed()
	}()
	WithRapidFlags(tb.Flags, func() { rapid.Check(tb, prop) })
	return !tb.Failed()
}
