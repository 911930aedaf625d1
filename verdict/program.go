package verdict

import (
	"fmt"
	"strings"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/model"
)

// Program is a counterexample as a value: `check --json`'s "program"
// (docs/json.md), what `outboxlab replay` runs. The drain is not in it:
// a replay runs the drain again after the steps.
type Program struct {
	Workers []string      `json:"workers"`
	Events  []string      `json:"events"`
	Steps   []ProgramStep `json:"steps"`
}

// ProgramStep is one step: the op and the outcome recorded, each as a
// program line prints it (model.FormatStep), and the fault that hit it.
type ProgramStep struct {
	Op      string `json:"op"`
	Outcome string `json:"outcome"`
	Fault   string `json:"fault,omitempty"` // request_lost, reply_lost or stuck_commit
}

// Settings are what a check ran with besides its topology, and what a
// replay of its program needs to run it the same way: `check --json`'s
// "settings".
type Settings struct {
	// Protocol is the protocol as check was given it: a built-in's name
	// or the file's path.
	Protocol string `json:"protocol"`
	Worker   string `json:"worker,omitempty"` // --worker's command
	Faults   bool   `json:"faults"`
	Workers  int    `json:"workers"` // at most this many worker processes per check
	Waiting  bool   `json:"waiting"`
	Split    bool   `json:"split"`
	// Relaxed are the properties the program was found with relaxed (a
	// profile's, model.Property.String): a replay relaxes them too.
	Relaxed string `json:"relaxed,omitempty"`
}

// Relax is Relaxed as the machine's properties.
func (s Settings) Relax() (model.Property, error) {
	var out model.Property
	if s.Relaxed == "" {
		return 0, nil
	}
	for _, name := range strings.Split(s.Relaxed, "+") {
		p, ok := model.ParseProperty(name)
		if !ok {
			return 0, fmt.Errorf("settings: relaxed names %q, which is no property", name)
		}
		out |= p
	}
	return out, nil
}

// ProgramOf is p as a value.
func ProgramOf(p machine.Program) *Program {
	out := &Program{Workers: p.Workers, Events: p.Events, Steps: []ProgramStep{}}
	for _, s := range p.Steps {
		out.Steps = append(out.Steps, ProgramStep{Op: s.Op.String(), Outcome: s.Out.String(), Fault: s.Fault})
	}
	return out
}

// Machine reads the program back for a replay; an error names the step.
func (p Program) Machine() (machine.Program, error) {
	// The setup is checked as the printed program's is.
	mp, err := machine.ParseProgram([]string{machine.Program{Workers: p.Workers, Events: p.Events}.String()})
	if err != nil {
		return mp, fmt.Errorf("program: %w", err)
	}
	for i, s := range p.Steps {
		op, err := model.ParseOp(s.Op)
		if err != nil {
			return mp, fmt.Errorf("program step %d: %w", i+1, err)
		}
		out, err := model.ParseOutcome(s.Outcome)
		if err != nil {
			return mp, fmt.Errorf("program step %d: %w", i+1, err)
		}
		switch s.Fault {
		case "", machine.ActRequestLost, machine.ActReplyLost, machine.ActStuckCommit:
		default:
			return mp, fmt.Errorf("program step %d: no fault %q (want %s, %s or %s)", i+1, s.Fault, machine.ActRequestLost, machine.ActReplyLost, machine.ActStuckCommit)
		}
		mp.Steps = append(mp.Steps, machine.Step{Op: op, Out: out, Fault: s.Fault})
	}
	return mp, nil
}
