package report_test

import (
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/model"
)

// TestTraceOfStaleComplete replays a fixed program against the baseline
// and checks what the recorder kept of each step: actor, outcome beside
// the model's, faults, rows on both sides, the violating step.
func TestTraceOfStaleComplete(t *testing.T) {
	tr := traceOf(t, "baseline", staleComplete)
	if tr.Violation == nil || tr.Violation.Rule != staleRule {
		t.Fatalf("violation %+v, want %q\n%s", tr.Violation, staleRule, strings.Join(tr.Program, "\n"))
	}
	if len(tr.Steps) != 8 || tr.AfterSteps {
		t.Fatalf("%d steps (after steps: %v), want the violation at step 8", len(tr.Steps), tr.AfterSteps)
	}
	actors := []string{"w1", "w2", "w2", "w1", machine.ActorFixture, "w1", "w2", "w1"}
	for i, s := range tr.Steps {
		if s.N != i+1 || s.Actor != actors[i] || s.Line == "" || s.Persisted == nil {
			t.Errorf("step %d: %+v, want number %d, actor %s, a line and persisted rows", i+1, s, i+1, actors[i])
		}
		if (s.Violation != nil) != (i == 7) {
			t.Errorf("step %d violation %v", i+1, s.Violation)
		}
	}
	if f := [...]string{tr.Steps[3].Fault, tr.Steps[6].Fault}; f != [2]string{machine.ActPause, machine.ActKill} {
		t.Errorf("faults of the pause and the kill: %v", f)
	}
	last := tr.Steps[7]
	if last.Got != "applied" || len(last.Expected) != 1 || last.Expected[0] != "rejected" || !last.ModelBefore {
		t.Errorf("violating step got %q, expected %v (model before: %v), want applied against rejected", last.Got, last.Expected, last.ModelBefore)
	}
	claim := tr.Steps[0]
	if want := (machine.TraceRow{Event: "e1", Status: model.InProgress, Gen: 1, HasGen: true, Lease: "live", Owner: "w1"}); claim.Model[0] != want {
		t.Errorf("model's e1 after the claim: %+v, want %+v", claim.Model[0], want)
	}
	if p := claim.Persisted[0]; p.Status != model.InProgress || p.Gen != 1 || p.Lease != "live" || len(claim.Differs) != 0 {
		t.Errorf("persisted e1 after the claim: %+v, differs %v", p, claim.Differs)
	}
	if p := last.Persisted[0]; p.Status != model.Sent || len(last.Differs) != 1 || last.Differs[0] != "e1" {
		t.Errorf("after the stale complete, persisted e1 %+v and differs %v: want SENT, the model's e1 still INPROGRESS", p, last.Differs)
	}
}

// TestTraceOfStrandedRow: the violation of the baseline's stranded row is
// the drain's claim that finds nothing, a drain step.
func TestTraceOfStrandedRow(t *testing.T) {
	tr := traceOf(t, "baseline", stranded)
	var bad []machine.TraceStep
	for _, s := range tr.Steps {
		if s.Violation != nil {
			bad = append(bad, s)
		}
	}
	if len(bad) != 1 || !bad[0].Drain || bad[0].Kind != model.ClaimOp || bad[0].Got != "empty" {
		t.Fatalf("violating steps %+v, want one: the drain's empty claim\n%s", bad, strings.Join(tr.Program, "\n"))
	}
	if !strings.Contains(bad[0].Violation.Rule, "claim returned nothing") {
		t.Errorf("rule %q", bad[0].Violation.Rule)
	}
}

// TestTraceOfAPassingReplay: the same program against leased, whose
// complete is fenced, breaks no rule: the recorder marks no step, keeps
// the rejected complete with the model's agreement, and records the
// drain's steps as drain steps. (The variant of the protocol that the
// baseline's trace must not look like.)
func TestTraceOfAPassingReplay(t *testing.T) {
	tr := traceOf(t, "leased", staleComplete)
	if tr.Violation != nil || tr.AfterSteps {
		t.Fatalf("leased broke %+v", tr.Violation)
	}
	for _, s := range tr.Steps {
		if s.Violation != nil || len(s.Differs) > 0 || s.ModelBefore {
			t.Errorf("step %d %s: violation %v, differs %v, model before %v", s.N, s.Op, s.Violation, s.Differs, s.ModelBefore)
		}
		if s.Drain != (s.N > len(staleComplete)-1) {
			t.Errorf("step %d %s: drain %v", s.N, s.Op, s.Drain)
		}
	}
	if late := tr.Steps[7]; late.Got != "rejected" || len(late.Expected) != 1 || late.Expected[0] != "rejected" {
		t.Errorf("the late complete: got %q, expected %v", late.Got, late.Expected)
	}
	if len(tr.Steps) <= len(staleComplete)-1 {
		t.Errorf("%d steps: the drain is missing", len(tr.Steps))
	}
}
