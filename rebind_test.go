package outboxlab

import (
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/search"
)

// A program written with the generations of a longer run, as a shrinker
// leaves it when it takes out the early claims: w1's lost claim and its
// stale complete name gen 3, where the run left after the cut hands out
// gen 1. Under async-commit (a crash costs a tenth of a second) the lenient
// replay skips the complete, which names a claim w1 never received, and
// passes; the rebinding replay gives it w1's own claim of e1 and finds the
// stale owner's complete landing on the reissued generation.
var staleGenerations = []string{
	"setup: 2 workers (w1 w2), events e1",
	"  1. w1.Claim() -> claimed e1 gen=3",
	"  2. Crash() -> rewound 1 acknowledged commit",
	"  3. w2.Claim() -> claimed e1 gen=3",
	"  4. w1.Complete(e1, gen=3) -> applied",
}

func TestReplayRebindingFollowsTheClaim(t *testing.T) {
	h := topologyHarness(t, pgserver.AsyncCommit, "leased", machine.Default())
	p, err := machine.ParseProgram(staleGenerations)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := h.ReplayLenient(p); err != nil || v != nil {
		t.Fatalf("lenient replay: violation %v, error %v; want the stale complete skipped and a pass:\n%s", v, err, strings.Join(h.Program(), "\n"))
	}
	v, err := h.ReplayRebinding(p)
	if err != nil {
		t.Fatal(err)
	}
	program := strings.Join(h.Program(), "\n")
	if v == nil || !strings.Contains(v.Rule, reissuedRule) {
		t.Fatalf("rebinding replay: violation %v, want %q:\n%s", v, reissuedRule, program)
	}
	if !strings.Contains(program, "w1.Complete(e1, gen=1) -> applied") {
		t.Fatalf("the complete was not rebound to gen 1:\n%s", program)
	}
}

// TestShrinkTakesTheTail: a counterexample at the end of a long program on
// a topology that forgets shrinks from its tail (search.tails): here five
// claims, retries and MakeDues come first, and every generation after them
// depends on them, so that delta debugging cannot take them out without
// losing the stale complete. Without the tails a minute of shrinking
// stopped at 17 steps (measured when the move was added); with them it
// takes a few replays, a tenth of a second each, to reach the four steps
// that matter, well inside the ten seconds given here.
func TestShrinkTakesTheTail(t *testing.T) {
	h := topologyHarness(t, pgserver.AsyncCommit, "leased", machine.Default())
	lines := []string{"setup: 2 workers (w1 w2), events e1"}
	step := func(s string) { lines = append(lines, "  0. "+s) }
	for g := 1; g <= 5; g++ {
		gen := string(rune('0' + g))
		step("w2.Claim() -> claimed e1 gen=" + gen)
		step("w2.Retry(e1, gen=" + gen + ") -> applied")
		step("MakeDue(e1) -> ok")
	}
	step("Flush() -> ok")
	step("w1.Claim() -> claimed e1 gen=6")
	step("Crash() -> rewound 1 acknowledged commit")
	step("w2.Claim() -> claimed e1 gen=6")
	step("w1.Complete(e1, gen=6) -> applied")
	p, err := machine.ParseProgram(lines)
	if err != nil {
		t.Fatal(err)
	}
	v, err := h.Replay(p)
	if err != nil || v == nil || !strings.Contains(v.Rule, reissuedRule) {
		t.Fatalf("the long program: violation %v, error %v; want %q:\n%s", v, err, reissuedRule, strings.Join(h.Program(), "\n"))
	}
	c := search.On(h).Minimize(search.Catch{Caught: true, Program: h.Program(), Recorded: h.Recorded(), Failure: v}, 10*time.Second)
	program := strings.Join(c.Program, "\n")
	if n := machine.CountSteps(c.Program); n > 4 || !strings.Contains(c.Failure.Rule, reissuedRule) {
		t.Fatalf("shrunk to %d steps, rule %q; want at most 4 steps, %q:\n%s", n, c.Failure.Rule, reissuedRule, program)
	}
}
