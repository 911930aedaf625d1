package machine

import (
	"slices"
	"strings"

	"github.com/outboxlab/outboxlab/model"
)

// TraceOfProgram is the trace of a printed program that is not replayed:
// what the printed lines say of each step (actor, op, outcome, the
// model's expectation where it differed, faults, the violation), and no
// rows. It is the report of a counterexample its replay cannot run (a
// failure at the setup, before any step; a saved program the protocol
// refuses); v is the violation the search found.
func TraceOfProgram(protocol string, program []string, v *Violation) *Trace {
	t := &Trace{Protocol: protocol, Program: slices.Clone(program), Violation: v, NotReplayed: "read from the printed program",
		Setup: TraceStep{Actor: ActorFixture, Kind: model.Enqueue, Op: "setup"}}
	drain := false
	for _, raw := range program {
		line := strings.TrimSpace(raw)
		switch {
		case strings.HasPrefix(line, "setup:"):
			t.Setup.Line = line
			t.Workers, t.Events, _ = parseSetup(line)
		case line == drainMarker:
			drain = true
		case strings.HasPrefix(line, violationPrefix):
			if op, ok := unloggedOp(line); ok {
				t.Steps = append(t.Steps, printedStep(len(t.Steps)+1, op, "", drain))
			}
			if len(t.Steps) == 0 {
				t.AfterSteps = true
				continue
			}
			last := &t.Steps[len(t.Steps)-1]
			last.Violation = &Violation{Detail: strings.TrimPrefix(line, violationPrefix)}
			if v != nil {
				last.Violation.Rule = v.Rule
			}
		case isStepLine(raw):
			if s, ok := parsePrintedStep(len(t.Steps)+1, raw, drain); ok {
				t.Steps = append(t.Steps, s)
			}
		}
	}
	return t
}

// parsePrintedStep reads one numbered line: "  3. w1.Claim() -> empty
// // model: claimed e1 gen=2", or a step hit by a fault, "-> unknown //
// reply_lost, ambiguous: ...". A line whose op does not parse is left out.
func parsePrintedStep(n int, raw string, drain bool) (TraceStep, bool) {
	text := strings.TrimSpace(raw[4:])
	text, comment, _ := strings.Cut(text, "   //")
	left, got, _ := strings.Cut(text, " -> ")
	op, err := model.ParseOp(left)
	if err != nil {
		return TraceStep{}, false
	}
	s := printedStep(n, op, strings.TrimSpace(got), drain)
	s.Line = strings.TrimSpace(raw)
	comment = strings.TrimSpace(comment)
	switch {
	case strings.HasPrefix(comment, "model: "):
		s.Expected = strings.Split(strings.TrimPrefix(comment, "model: "), " | ")
	case strings.Contains(comment, ActRequestLost):
		s.Fault = ActRequestLost
	case strings.Contains(comment, ActReplyLost):
		s.Fault = ActReplyLost
	}
	if s.Expected == nil && s.Got != string(model.Unknown) {
		s.Expected = []string{s.Got} // the model allowed it: no comment
	}
	if on, ok := strings.CutPrefix(s.Got, "waiting on "); ok && len(strings.Fields(on)) > 0 {
		s.WaitingOn = strings.Fields(on)[0]
	}
	return s, true
}

func printedStep(n int, op model.Op, got string, drain bool) TraceStep {
	return TraceStep{N: n, Actor: actorOf(op), Kind: op.Kind, Op: op.String(), Got: got, Drain: drain, Fault: faultOf(op, "")}
}
