package machine

import (
	"slices"

	"github.com/outboxlab/outboxlab/model"
)

// A check keeps the program it runs as a value (Recorded), step by step
// as it logs each line: the search shrinks and replays the value, and
// the printed lines (Program) are its rendering for a person, which
// ParseProgram reads back for a program a user saved. A step's value is
// what its line shows (model.Op.AsPrinted): an op's claim ID and a
// fenceless count are the run's own, and a replay finds the claim by
// what the line names.
//
// The two forms are one program: the setup, then each numbered step
// before the drain, with the fault that hit it; and a step that failed in
// its worker before its line was printed (blocked, a server error), which
// its violation line names, with the outcome unknown.
// TestRecordedProgramIsThePrintedOne holds them to each other.

// Recorded is the last check's program as a value: after a failed
// rapid.Check, the shrunk counterexample, as Program prints it.
func (h *Harness) Recorded() Program {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.recorded
	p.Workers, p.Events, p.Steps = slices.Clone(p.Workers), slices.Clone(p.Events), slices.Clone(p.Steps)
	return p
}

// recordSetup starts the value of a check's program.
func (r *run) recordSetup(workers, events []string) {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	r.h.recorded = Program{Workers: slices.Clone(workers), Events: slices.Clone(events)}
}

// recordStep adds a step, as its line shows it, to the program's value;
// the drain's steps are not the program's (a replay runs the drain
// again). fault is kept only where the line names it: an unknown
// outcome's lost request or reply, or stuck commit.
func (r *run) recordStep(op model.Op, out model.Outcome, fault string) {
	if r.draining {
		return
	}
	if out.Kind != model.Unknown || !stepFaultName(fault) {
		fault = ""
	}
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	r.h.recorded.Steps = append(r.h.recorded.Steps, Step{Op: op.AsPrinted(), Out: out.AsPrinted(), Fault: fault})
}

// failStep is fail for op, a step that failed in its worker or fixture
// before its line was printed: the program keeps it, its outcome unknown,
// as its violation line names it (detail starts with op).
func (r *run) failStep(op model.Op, rule, detail string) {
	r.recordStep(op, model.Outcome{Kind: model.Unknown}, "")
	r.fail(rule, detail)
}
