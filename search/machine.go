package search

import "github.com/outboxlab/outboxlab/machine"

// Searcher runs the search and the shrinking on one harness: rapid finds a
// failing program, and the harness's replays make it small. It is the
// harness with the search's methods; everything it replays goes through
// the machine's own checks.
type Searcher struct {
	*machine.Harness
	// Seeds, when set, are the seeds of the checks to run, one rapid.Check
	// each (a shard: see Shard); nil runs rapid's budget from its seed.
	Seeds []uint64
	// Flags are the rapid flags the search runs under (its budget: checks,
	// seed, steps), over the command line's and the test's; each search
	// holds its own (WithRapidFlags).
	Flags map[string]string
}

// On is the searcher of h.
func On(h *machine.Harness) Searcher { return Searcher{Harness: h} }

// The machine's programs, as this package reads and writes them.
type (
	Program   = machine.Program
	Step      = machine.Step
	Violation = machine.Violation
)

var (
	ParseProgram = machine.ParseProgram
	CountSteps   = machine.CountSteps
)
