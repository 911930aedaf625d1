package report

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	texttemplate "text/template"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/model"
)

// hostile is untrusted text where a page could be made to run it: a
// protocol's name, a SQL error, a rule.
const hostile = `<script>alert("x")</script><img src=x onerror=alert(1)>`

// handTrace is a trace as a replay could record it, with markup in every
// field a protocol or a server controls.
func handTrace() *machine.Trace {
	row := func(st model.Status, gen int64, lease, owner string) machine.TraceRow {
		return machine.TraceRow{Event: "e1", Status: st, Gen: gen, HasGen: true, Lease: lease, Owner: owner}
	}
	ready := []machine.TraceRow{row(model.Ready, 0, "due", "")}
	claimed := []machine.TraceRow{row(model.InProgress, 1, "live", "w1")}
	return &machine.Trace{
		Protocol: "my" + hostile, Policy: "order=fifo", Workers: []string{"w1", "w2"}, Events: []string{"e1"}, HasGen: true,
		Setup: machine.TraceStep{Actor: machine.ActorFixture, Op: "setup", Line: "setup: 2 workers (w1 w2), events e1", Model: ready, Persisted: ready},
		Steps: []machine.TraceStep{
			{N: 1, Actor: "w1", Kind: model.ClaimOp, Op: "w1.Claim()", Got: "claimed e1 gen=1", Expected: []string{"claimed e1 gen=1"}, Model: claimed, Persisted: claimed},
			{N: 2, Actor: "w2", Kind: model.ClaimOp, Op: "w2.Claim()", Got: "unknown", Fault: machine.ActReplyLost, Model: claimed, Persisted: claimed},
			{N: 3, Actor: "w2", Kind: model.Complete, Op: "w2.Complete(e1, gen=1)", WaitingOn: "w1", Model: claimed, Persisted: claimed},
			{N: 4, Actor: "w1", Kind: model.Complete, Op: "w1.Complete(e1, gen=1)", Got: "applied", Expected: []string{"rejected"},
				Model: claimed, ModelBefore: true, Persisted: []machine.TraceRow{row(model.Sent, 1, "", "")}, Differs: []string{"e1"},
				Violation: &machine.Violation{Rule: "rule " + hostile, Detail: `complete failed: ERROR: syntax error at or near "<script>" (SQLSTATE 42601)`}},
		},
		Violation: &machine.Violation{Rule: "rule " + hostile, Detail: "detail"},
		Program:   []string{"setup: 2 workers (w1 w2), events e1", "  1. w1.Claim() -> claimed e1 gen=1 " + hostile},
		Reproduce: "outboxlab check --seed 7 'my" + hostile + "'",
	}
}

func rendered(t *testing.T, tr *machine.Trace) string {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, tr); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestRenderEscapes: markup from the run shows as text, never as markup;
// the page's one script is its own. The mutant is the same page through
// text/template, which escapes nothing: the check must reject it.
func TestRenderEscapes(t *testing.T) {
	if problems := escapingProblems(rendered(t, handTrace())); len(problems) > 0 {
		t.Error(strings.Join(problems, "\n"))
	}
	mutant := texttemplate.Must(texttemplate.New("mutant").Funcs(texttemplate.FuncMap{
		"cols": func(p page) int { return 1 + len(p.Lanes) + len(p.Events) },
	}).Parse(pageHTML))
	var b bytes.Buffer
	if err := mutant.Execute(&b, layout(handTrace())); err != nil {
		t.Fatal(err)
	}
	if len(escapingProblems(b.String())) == 0 {
		t.Error("mutant text_template: the escaping check passes a page that escapes nothing")
	}
}

// escapingProblems says where page lets the hostile text act as markup.
func escapingProblems(page string) []string {
	var out []string
	if n := strings.Count(page, "<script"); n != 1 {
		out = append(out, fmt.Sprintf("%d <script elements, want the page's own one only", n))
	}
	if strings.Contains(page, "<img") {
		out = append(out, "the page holds an <img element: markup from the run was not escaped")
	}
	if n := strings.Count(page, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"); n < 5 {
		out = append(out, fmt.Sprintf("the hostile text is on the page as text %d times, want it in the title, the name, the rule, the program and the command", n))
	}
	return out
}

// TestRenderEveryStep: the setup and every step are on the page, in
// order, each in its own lane, with its outcome, the model's
// expectation, and its marks.
func TestRenderEveryStep(t *testing.T) {
	tr := handTrace()
	page := rendered(t, tr)
	last := -1
	for _, s := range tr.Steps {
		at := strings.Index(page, `data-step="`+strconv.Itoa(s.N)+`"`)
		if at < last {
			t.Fatalf("step %d missing or out of order", s.N)
		}
		last = at
	}
	for _, want := range []string{
		"FAULT reply_lost", "WAITING on w1", "model: applied or not", // the marks, and an unknown outcome
		"model: rejected", // the expectation beside "applied"
		"database: SENT gen=1", "owner w1", "lease live", "reproduce:",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page has no %q", want)
		}
	}
	lanes := regexp.MustCompile(`<th class="lane">([^<]*)</th>`).FindAllStringSubmatch(page, -1)
	if len(lanes) != 3 || lanes[0][1] != "w1" || lanes[1][1] != "w2" || lanes[2][1] != machine.ActorFixture {
		t.Errorf("lanes %v, want w1 w2 fixture", lanes)
	}
}

// TestRenderMarksTheViolation: exactly one element is the violation, it is
// the violating step's, and it carries the rule; a trace that broke after
// its steps gets one after them.
func TestRenderMarksTheViolation(t *testing.T) {
	tr := handTrace()
	page := rendered(t, tr)
	if n := strings.Count(page, `id="violation"`); n != 1 {
		t.Fatalf("%d violation elements", n)
	}
	block := page[strings.Index(page, `id="violation"`):]
	block = block[:strings.Index(block, "</tbody>")]
	if !strings.Contains(block, `data-step="4"`) || !strings.Contains(block, "rule &lt;script&gt;") {
		t.Errorf("the violation element is not step 4's with its rule:\n%s", block)
	}
	tr.Steps[3].Violation, tr.AfterSteps = nil, true
	page = rendered(t, tr)
	if strings.Count(page, `id="violation"`) != 1 || strings.Index(page, `id="violation"`) < strings.Index(page, `data-step="4"`) {
		t.Errorf("a violation after the steps is not marked once after them")
	}
}

// TestRenderPrintedProgram: a counterexample its replay cannot run has its
// page read from the printed lines, which says so and still marks every
// step, the fault and the violation.
func TestRenderPrintedProgram(t *testing.T) {
	printed := []string{
		"setup: 2 workers (w1 w2), events e1",
		"  1. w1.Claim() -> claimed e1 gen=1",
		"  2. w1.Complete(e1, gen=1) -> unknown   // reply_lost, ambiguous: applied or not, decided by the next read",
		"     -- drain --",
		"  3. w1.Claim() -> empty   // model: claimed e1 gen=2",
		"   ^ violation: w1.Claim() -> empty: claim returned nothing while e1 is claimable (stranded row)",
	}
	v := &machine.Violation{Rule: "claim returned nothing while e1 is claimable"}
	tr := machine.TraceOfProgram("mutant", printed, v)
	if len(tr.Steps) != 3 || tr.Steps[1].Fault != machine.ActReplyLost || !tr.Steps[2].Drain || tr.Steps[2].Violation == nil {
		t.Fatalf("trace of the printed program: %+v", tr.Steps)
	}
	if got := tr.Steps[2].Expected; len(got) != 1 || got[0] != "claimed e1 gen=2" {
		t.Errorf("the model's expectation of step 3: %v", got)
	}
	page := rendered(t, tr)
	for _, want := range []string{"not replayed", "FAULT reply_lost", "model: claimed e1 gen=2", `id="violation" data-step="3"`, v.Rule} {
		if !strings.Contains(page, want) {
			t.Errorf("the page has no %q", want)
		}
	}
}

// TestLaneStates: between its steps a lane shows its worker's open
// transaction, pause and death, each ended by the step that ends it.
func TestLaneStates(t *testing.T) {
	steps := []machine.TraceStep{
		{Actor: "w1", Kind: model.Begin}, {Actor: "w1", Kind: model.Pause}, {Actor: "w2", Kind: model.Kill},
		{Actor: "w1", Kind: model.Resume}, {Actor: "w1", Kind: model.Commit}, {Actor: "w2", Kind: model.Respawn},
	}
	want := [][]string{{"intx", ""}, {"paused intx", ""}, {"paused intx", "dead"}, {"intx", "dead"}, {"", "dead"}, {"", ""}}
	ls := laneStates{}
	for i, s := range steps {
		if got := ls.after(s, []string{"w1", "w2"}); !slices.Equal(got, want[i]) {
			t.Errorf("after %s.%s: %q, want %q", s.Actor, s.Kind, got, want[i])
		}
	}
	page := rendered(t, handTrace())
	if !strings.Contains(page, `class="swatch paused"`) {
		t.Error("the legend does not explain the lane states")
	}
}
