package machine

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/outboxlab/outboxlab/model"
)

// Program is a counterexample as the machine prints it, read back: the
// setup, and the steps the random part of the check ran. The drain's steps
// are not kept: the drain is the same for every check, and a replay runs it
// again after the steps.
type Program struct {
	Workers []string
	Events  []string
	Steps   []Step
}

// Step is one numbered line: the op and what the protocol returned when
// the program was recorded. Fault is the fault that hit it, "" for none:
// a lost request or reply (ActRequestLost, ActReplyLost), or a commit
// stuck behind a stalled synchronous standby (ActStuckCommit, whose
// failover is the Failover() step after it). A replay injects it again at
// this step.
type Step struct {
	Op    model.Op
	Out   model.Outcome
	Fault string
}

const drainMarker = "-- drain --"

// isStepLine reports whether a program line is a numbered step
// ("  3. w1.Claim() -> empty").
func isStepLine(l string) bool { return len(l) > 4 && l[3] == '.' }

// ParseProgram reads a program printed by the machine (Harness.Program):
//
//	setup: 2 workers (w1 w2), events e1
//	  1. w1.Claim() -> claimed e1 gen=1
//	     -- drain --
//	  2. Expire(e1) -> ok
//	  3. w1.Claim() -> empty   // model: claimed e1 gen=2
//	   ^ violation: ...
//
// Lines starting with '#' and blank lines are skipped; a step's trailing
// "   // ..." comment is dropped.
func ParseProgram(lines []string) (Program, error) {
	var p Program
	setup, drained := false, false
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "", strings.HasPrefix(trimmed, "#"):
			continue
		case strings.HasPrefix(trimmed, violationPrefix):
			// A step that failed in the worker (blocked, a server error) is
			// not printed as a numbered line: the violation names it.
			if op, ok := unloggedOp(trimmed); ok && setup && !drained {
				p.Steps = append(p.Steps, Step{Op: op, Out: model.Outcome{Kind: model.Unknown}})
			}
		case strings.HasPrefix(trimmed, "setup:"):
			if setup {
				return p, fmt.Errorf("line %d: a second setup line", i+1)
			}
			var err error
			if p.Workers, p.Events, err = parseSetup(trimmed); err != nil {
				return p, fmt.Errorf("line %d: %w", i+1, err)
			}
			setup = true
		case trimmed == drainMarker:
			drained = true
		case strings.HasPrefix(trimmed, thenPrefix):
			// A waiting step's end: the holder's step before it ends the
			// wait again in a replay.
		case isStepLine(line):
			if !setup {
				return p, fmt.Errorf("line %d: a step before the setup line", i+1)
			}
			if drained {
				continue
			}
			text := strings.TrimSpace(line[4:])
			fault := ""
			if j := strings.Index(text, "   //"); j >= 0 {
				var err error
				if fault, err = stepFault(text[j:]); err != nil {
					return p, fmt.Errorf("line %d: %w", i+1, err)
				}
				text = text[:j]
			}
			op, out, err := model.ParseStep(text)
			if err != nil {
				return p, fmt.Errorf("line %d: %w", i+1, err)
			}
			p.Steps = append(p.Steps, Step{Op: op, Out: out, Fault: fault})
		default:
			return p, fmt.Errorf("line %d: not a program line: %q", i+1, line)
		}
	}
	if !setup {
		return p, fmt.Errorf("no setup line")
	}
	return p, nil
}

// stepFault is the fault a step's comment names ("   // reply_lost,
// ambiguous: ..."), "" for none.
func stepFault(comment string) (string, error) {
	note := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(comment), "//"))
	name, _, _ := strings.Cut(note, ",")
	if stepFaultName(name) {
		return name, nil
	}
	return "", nil
}

// stepFaultName reports whether name is a fault that hits a step and a
// replay injects again at it: a lost request or reply, a stuck commit.
func stepFaultName(name string) bool {
	return name == ActRequestLost || name == ActReplyLost || name == ActStuckCommit
}

// ambiguousNote is the comment the machine prints after a step whose
// outcome is unknown (judge): the fault first, when one hit it.
const ambiguousNote = "ambiguous: applied or not, decided by the next read"

const violationPrefix = "^ violation: "

// unloggedOp reads the step a violation line starts with when that step
// failed before its line was printed: "^ violation: w2.Begin() blocked for
// 2s: ...". A violation of a printed step repeats it with its outcome
// ("w1.Claim() -> empty: ..."), and one of the persisted rows names none.
//
// A split step's part mark after the op is the op's: "w1.Complete(e1,
// gen=1) [2/2] failed: ...".
func unloggedOp(line string) (model.Op, bool) {
	text := strings.TrimPrefix(line, violationPrefix)
	i := strings.Index(text, ") ")
	if i < 0 {
		return model.Op{}, false
	}
	end := i + 1
	if mark := leadingPartMark.FindString(text[end:]); mark != "" {
		end += len(mark) - 1 // the mark, not the space after it
	}
	if strings.HasPrefix(text[end:], " -> ") {
		return model.Op{}, false
	}
	op, err := model.ParseOp(text[:end])
	return op, err == nil
}

// NamesUnprintedStep reports whether a program line is a violation that
// names a step which failed before its line was printed: ParseProgram
// reads it as that step.
func NamesUnprintedStep(line string) bool {
	t := strings.TrimSpace(line)
	if !strings.HasPrefix(t, violationPrefix) {
		return false
	}
	_, ok := unloggedOp(t)
	return ok
}

// leadingPartMark is a split step's part mark, followed by a space.
var leadingPartMark = regexp.MustCompile(`^ \[\d+/\d+\] `)

// parseSetup reads "setup: 2 workers (w1 w2), events e1 e2".
func parseSetup(line string) (workers, events []string, err error) {
	var n int
	rest, ok := strings.CutPrefix(line, "setup: ")
	if _, scanErr := fmt.Sscanf(rest, "%d workers (", &n); !ok || scanErr != nil {
		return nil, nil, fmt.Errorf("want \"setup: N workers (w1 ...), events e1 ...\", got %q", line)
	}
	names, evs, ok := strings.Cut(rest[strings.Index(rest, "(")+1:], "), events ")
	if !ok {
		return nil, nil, fmt.Errorf("want \"setup: N workers (w1 ...), events e1 ...\", got %q", line)
	}
	workers, events = strings.Fields(names), strings.Fields(evs)
	for i, w := range workers {
		if w != WorkerName(i) {
			return nil, nil, fmt.Errorf("worker %d is %q, want %q", i+1, w, WorkerName(i))
		}
	}
	for i, e := range events {
		if e != EventName(i) {
			return nil, nil, fmt.Errorf("event %d is %q, want %q", i+1, e, EventName(i))
		}
	}
	if len(workers) != n || len(events) == 0 {
		return nil, nil, fmt.Errorf("setup %q: %d workers named, %d events", line, len(workers), len(events))
	}
	return workers, events, nil
}

// String prints p as the machine prints a program's setup and steps (no
// drain, no violation), each fault in its step's comment: what
// ParseProgram reads back.
func (p Program) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "setup: %d workers (%s), events %s", len(p.Workers), strings.Join(p.Workers, " "), strings.Join(p.Events, " "))
	for i, s := range p.Steps {
		fmt.Fprintf(&b, "\n%3d. %s", i+1, model.FormatStep(s.Op, s.Out))
		if s.Fault != "" {
			fmt.Fprintf(&b, "   // %s, %s", s.Fault, ambiguousNote)
		}
	}
	return b.String()
}

// CountSteps counts the steps of a printed program: its numbered lines,
// and the step a violation names when it failed before its line was
// printed (a blocked claim).
func CountSteps(program []string) int {
	n := 0
	for _, l := range program {
		if isStepLine(l) {
			n++
		}
		if t := strings.TrimSpace(l); strings.HasPrefix(t, violationPrefix) {
			if _, ok := unloggedOp(t); ok {
				n++
			}
		}
	}
	return n
}
