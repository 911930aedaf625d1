package machine

import (
	"slices"
	"strings"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
)

// recorder fills a Trace while Harness.Trace replays a program. The step
// path calls it through the run's trace* hooks, one line each; without a
// recorder (every check and every ordinary replay) each hook returns at
// once, so the search pays nothing for the report.
type recorder struct {
	t   *Trace
	cur *TraceStep // the step running now: the setup before the first, nil between steps
}

// traceBegin opens the trace's next step with the model's rows before it;
// the func it returns closes the step (exec defers it, so a step that
// fails is closed too).
func (r *run) traceBegin(op model.Op) func() {
	rec := r.h.trace
	if rec == nil {
		return func() {}
	}
	rec.t.Steps = append(rec.t.Steps, TraceStep{
		N: len(rec.t.Steps) + 1, Actor: actorOf(op), Kind: op.Kind, Op: r.shownOp(op).String(),
		Drain: r.draining, Fault: faultOf(op, r.fault),
		Model: modelRows(r.model(), r.hasGen()), ModelBefore: true,
	})
	rec.cur = &rec.t.Steps[len(rec.t.Steps)-1] // no step is appended before it closes
	return func() { rec.cur = nil }
}

// traceOutcome keeps what the system returned and what the model allowed.
func (r *run) traceOutcome(got model.Outcome, allowed []model.Transition) {
	if r.h.trace == nil || r.h.trace.cur == nil {
		return
	}
	cur := r.h.trace.cur
	cur.Got = r.shownOutcome(got).String()
	if got.Kind == model.Waiting {
		cur.WaitingOn = got.On
	}
	for _, tr := range allowed {
		if s := r.shownModel(tr.Out).String(); !slices.Contains(cur.Expected, s) {
			cur.Expected = append(cur.Expected, s)
		}
	}
}

// traceRead keeps the rows the state query read last during the step.
func (r *run) traceRead(rows []sut.StateRow) {
	if r.h.trace == nil || r.h.trace.cur == nil {
		return
	}
	r.h.trace.cur.Persisted = persistedRows(viewsOf(rows))
}

// traceStates keeps the model's rows after the step: the first possible
// state the persisted rows agree with or, when none does, the first
// state the model expected.
func (r *run) traceStates(next []model.State, views []model.RowView) {
	if r.h.trace == nil || r.h.trace.cur == nil || len(next) == 0 {
		return
	}
	s := next[0]
	if matched := model.Match(next, views, r.hasGen()); len(matched) > 0 {
		s = matched[0]
	}
	r.h.trace.cur.Model, r.h.trace.cur.ModelBefore = modelRows(s, r.hasGen()), false
}

// traceFail marks the running step as the violating one, or the trace as
// broken after its steps when none runs (the drain's final check).
func (r *run) traceFail(rule, detail string) {
	rec := r.h.trace
	if rec == nil {
		return
	}
	if rec.cur == nil {
		rec.t.AfterSteps = true
		return
	}
	rec.cur.Violation = &Violation{Rule: rule, Detail: detail}
}

// traceLine keeps the program's line of the running step (or the setup
// line).
func (r *run) traceLine(line string) {
	rec := r.h.trace
	if rec == nil || rec.cur == nil {
		return
	}
	switch {
	case rec.cur == &rec.t.Setup && strings.HasPrefix(line, "setup:"):
	case rec.cur != &rec.t.Setup && (isStepLine(line) || strings.HasPrefix(strings.TrimSpace(line), thenPrefix)):
	default:
		return
	}
	rec.cur.Line = strings.TrimSpace(line)
}

// actorOf is the lane a step belongs to.
func actorOf(op model.Op) string {
	switch {
	case op.Worker != "":
		return op.Worker
	case op.Kind == model.Rescue:
		return ActorRescuer
	case op.Kind == model.Restart, op.Kind.Rewinds(), op.Kind == model.Flush, op.Kind == model.Stall:
		return ActorServer
	}
	return ActorFixture
}

// faultOf names the fault a step is (a pause, a kill, a server restart)
// or suffered (a network fault armed for it).
func faultOf(op model.Op, armed string) string {
	switch op.Kind {
	case model.Pause:
		return ActPause
	case model.Kill:
		return ActKill
	case model.EndSession:
		return ActEndSession
	case model.Restart, model.Crash, model.Failover:
		return ActDBRestart
	case model.Flush, model.Stall:
		return ActDBDurable
	}
	return armed
}
