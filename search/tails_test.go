package search

import (
	"strings"
	"testing"
)

// A program with a rewind gets its last 4, 8, ... steps as candidates,
// shortest first, each simpler than the program; one without a rewind
// gets none, so that the shrinking on single is what it was.
func TestTails(t *testing.T) {
	var lines []string
	lines = append(lines, "setup: 2 workers (w1 w2), events e1")
	for i := 0; i < 9; i++ {
		lines = append(lines, "  0. Age(e1) -> ok")
	}
	lines = append(lines,
		"  0. w1.Claim() -> claimed e1 gen=1",
		"  0. Failover() -> rewound 1 acknowledged commit",
		"  0. w2.Claim() -> claimed e1 gen=1",
		"  0. w1.Complete(e1, gen=1) -> applied")
	p := mustParse(t, strings.Join(lines, "\n"))
	got := tails(p)
	if len(got) != 2 {
		t.Fatalf("%d tails of a program of %d steps, want 2 (4 and 8 steps)", len(got), len(p.Steps))
	}
	want(t, p, got[0], true, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Failover() -> rewound 1 acknowledged commit
  3. w2.Claim() -> claimed e1 gen=1
  4. w1.Complete(e1, gen=1) -> applied`)
	if n := len(got[1].Steps); n != 8 || got[1].Steps[7].Op != p.Steps[len(p.Steps)-1].Op {
		t.Errorf("the second tail has %d steps, want the program's last 8", n)
	}

	noRewind := mustParse(t, strings.Replace(strings.Join(lines, "\n"), "Failover() -> rewound 1 acknowledged commit", "Restart() -> ok", 1))
	if got := tails(noRewind); len(got) != 0 {
		t.Errorf("%d tails of a program without a rewind, want none", len(got))
	}
}
