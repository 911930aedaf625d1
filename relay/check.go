package relay

import (
	"fmt"
)

// Outcome is one program's run: its log (one line a step, the drain's
// included), the properties it broke and the coverage it reached.
type Outcome struct {
	Lines      []string
	Violations []Violation
	Coverage   map[string]int
	History    History
}

// Failed reports whether a property broke.
func (o Outcome) Failed() bool { return len(o.Violations) > 0 }

// Broke reports whether rule is among the broken properties.
func (o Outcome) Broke(rule string) bool {
	for _, v := range o.Violations {
		if v.Rule == rule {
			return true
		}
	}
	return false
}

// Run runs a program, the drain after it, and judges the history. An
// error is the harness's (a process that would not start, a broker that
// would not answer), never a verdict.
func (h *Harness) Run(p Program) (Outcome, error) {
	r, err := h.begin(p)
	if err != nil {
		return Outcome{}, fmt.Errorf("harness: %w", err)
	}
	r.log("setup: workers %v, events %v, topic of one partition", p.Workers, p.Events)
	for _, s := range p.Steps {
		if err := r.exec(s); err != nil {
			return Outcome{Lines: r.lines}, err
		}
	}
	if err := r.drain(); err != nil {
		return Outcome{Lines: r.lines}, err
	}
	if err := r.finish(); err != nil {
		return Outcome{Lines: r.lines}, err
	}
	out := Outcome{Lines: r.lines, Violations: Judge(r.hist), Coverage: r.coverage, History: r.hist}
	for k, v := range Counts(r.hist) {
		out.Coverage[k] += v
	}
	return out, nil
}
