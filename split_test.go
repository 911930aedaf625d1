package outboxlab

import (
	"regexp"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/search"
)

// The split mutants (testdata/mutants/split_*.sql) check ownership in the
// first statement of a two-statement complete, retry or renew without a
// lock, and write by id in the second: a check-then-act inside one READ
// COMMITTED transaction. Run whole, such a section is correct; only a step
// split at its statement boundary, with the lease expiring (and a reclaim)
// in between, shows the race. Their twins with FOR UPDATE on the check
// (testdata/correct/two_statement_*.sql) pass. split_claim_bury_read_then_write
// is the claim's: it reads the spent claims' ids, then buries them by id,
// and a spent claim's owner finishing in between (policy=lenient) is
// buried SENT; its twin, testdata/correct/split_claim_bury_rechecked.sql,
// looks again.

// isSplit reports whether m is one of the split mutants.
func isSplit(m protocolFile) bool { return strings.HasPrefix(m.name, "split_") }

// maxSplitSteps is the longest a split mutant's counterexample may be:
// the bound, for a claim, the first part, the expiry, a reclaim
// and the last part with room to spare.
const maxSplitSteps = 8

// checkSplitCatch holds a split mutant's counterexample (TestMutantsCaught)
// to what it must show: a split step, in at most maxSplitSteps steps.
func checkSplitCatch(t *testing.T, m protocolFile, r measured) {
	t.Helper()
	first, last := false, false
	for _, p := range partMark.FindAllStringSubmatch(strings.Join(r.program, "\n"), -1) {
		first = first || p[1] != p[2]
		last = last || p[1] == p[2]
	}
	if !first || !last {
		t.Errorf("the split mutant %s was caught without a split step (a first part and a last part):\n%s", m.name, strings.Join(r.program, "\n"))
	}
	checkCatchShows(t, "split", m, r, "a split step", maxSplitSteps)
}

// partMark is a split step's part in a printed program: [K/N].
var partMark = regexp.MustCompile(` \[(\d+)/(\d+)\] ->`)

// TestSplitMutantsNeedSplitSteps: the machine that runs every section
// whole (`outboxlab check --split=false`) misses each split mutant, and so
// do the six scenarios; TestMutantsCaught catches them with split steps.
func TestSplitMutantsNeedSplitSteps(t *testing.T) {
	honestSearch(t)
	// Each mutant must pass here: CI's pass budget, the nightly's default.
	passBudget(t)
	for _, name := range []string{"split_complete_check_then_act", "split_retry_check_then_act", "split_renew_check_then_act", "split_claim_bury_read_then_write"} {
		m := protocolFileNamed(t, mutantDir, name)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if fails := failedScenarios(t, m.path); len(fails) > 0 {
				t.Errorf("the six scenarios catch %s (%v): it no longer needs a split step", name, fails)
			}
			cfg := mutantConfig()
			cfg.NoSplitSteps = true
			h := harness(t, m.path, cfg)
			wantMissed(t, "split", name, search.Measure(t.Name(), h, h.Check))
			if n := h.Coverage.Counts()[machine.CovSplitStep]; n != 0 {
				t.Errorf("with split steps off the machine took %d", n)
			}
		})
	}
}

// TestSplitReplays: a printed program with a split step replays to the
// same violation, and one whose last part has lost its first (as a
// shrinker's candidate may) is refused, not run.
func TestSplitReplays(t *testing.T) {
	h := harness(t, "testdata/mutants/split_complete_check_then_act.sql", mutantConfig())
	lines := []string{
		"setup: 2 workers (w1 w2), events e1",
		"  1. w1.Claim() -> claimed e1 gen=1",
		"  2. w1.Complete(e1, gen=1) [1/2] -> ok",
		"  3. Expire(e1) -> ok",
		"  4. w2.Claim() -> claimed e1 gen=2",
		"  5. w1.Complete(e1, gen=1) [2/2] -> applied",
	}
	p, err := machine.ParseProgram(lines)
	if err != nil {
		t.Fatal(err)
	}
	v, err := h.Replay(p)
	if err != nil {
		t.Fatal(err)
	}
	if v == nil || v.Rule != "stale owner's complete applied" {
		t.Fatalf("replay: violation %v, want stale owner's complete applied\n%s", v, strings.Join(h.Program(), "\n"))
	}
	orphan := p
	orphan.Steps = append(orphan.Steps[:1:1], orphan.Steps[2:]...)
	if _, err := h.Replay(orphan); err == nil || !strings.Contains(err.Error(), "no split") {
		t.Errorf("a last part without its first replayed: err %v", err)
	}
	if got := p.Steps[1].Op.Part; got != (model.Part{Upto: 1, Of: 2}) {
		t.Errorf("parsed part %+v, want [1/2]", got)
	}
}

// TestRestartReplays: a program with a server restart replays (so that a
// counterexample found with one shrinks by replaying, not by rapid's
// slower shrinking of draws): the open claim transaction is lost with the
// restart, and the next claim takes the row at the same generation.
func TestRestartReplays(t *testing.T) {
	cfg := mutantConfig()
	cfg.Faults = true // the injector restarts the server
	h := harness(t, "testdata/correct/two_statement_complete.sql", cfg)
	p, err := machine.ParseProgram([]string{
		"setup: 2 workers (w1 w2), events e1",
		"  1. w1.Begin() -> claimed e1 gen=1",
		"  2. Restart() -> ok",
		"  3. w2.Claim() -> claimed e1 gen=1",
		"  4. w2.Complete(e1, gen=1) -> applied",
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := h.Replay(p)
	if err != nil || v != nil {
		t.Fatalf("replay: violation %v, err %v\n%s", v, err, strings.Join(h.Program(), "\n"))
	}
	if got := strings.Join(h.Program(), "\n"); !strings.Contains(got, "2. Restart() -> ok") || !strings.Contains(got, "3. w2.Claim() -> claimed e1 gen=1") {
		t.Errorf("the replay ran another program:\n%s", got)
	}
}

// TestSplitCatchWithARestartShrinks: seed 4 of the default check (faults
// on) finds split_complete_check_then_act's race in a program with a
// server restart in it; that program shrinks by replaying to a split
// counterexample of at most maxSplitSteps steps (it came out at 42 steps
// when a restart could not be replayed and rapid shrank the draws).
func TestSplitCatchWithARestartShrinks(t *testing.T) {
	honestSearch(t)
	setRapidFlag(t, "rapid.seed", "4")
	h := harness(t, "testdata/mutants/split_complete_check_then_act.sql", machine.Default())
	// The shrinking's budget is time: a quiet machine reaches 4 steps in
	// 12s, one loaded by other work (a load average of 13 on two cores)
	// left 13 steps after 20s, and 20 after 80s once, beside the rest of
	// the suite. What this test holds is where the shrinking ends, not how
	// fast the machine gets there, so it shrinks again from what a round
	// left while the round took steps out; a round that takes none out
	// means the shrinking is stuck, whatever the load.
	s := search.On(h)
	c := s.Search(t.Name(), 4*shrinkBudget)
	if !c.Caught || c.Failure == nil {
		t.Fatalf("not caught: %s", c.Report)
	}
	for round := 0; round < 5 && c.Steps() > maxSplitSteps; round++ {
		before := c.Steps()
		if c = s.Minimize(c, 4*shrinkBudget); c.Steps() >= before {
			break
		}
	}
	steps := strings.Join(c.Program, "\n")
	if c.Steps() > maxSplitSteps || !strings.Contains(steps, " [1/") || !strings.Contains(steps, " [2/") {
		t.Errorf("%s: %d steps, want a split step in at most %d:\n%s", c.Failure.Rule, c.Steps(), maxSplitSteps, steps)
	}
}
