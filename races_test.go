package outboxlab

import (
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/search"
)

// The race mutants (testdata/mutants/race_*.sql, see RACES.md) read a
// lenient protocol's generation guard from the statement's snapshot: a
// stale outcome that waits behind a reclaim's open transaction lands on the
// new claim, because PostgreSQL re-checks only the target row's own
// predicate after the wait. Only a waiting step shows it.

// isRace reports whether m is one of the race mutants.
func isRace(m protocolFile) bool { return strings.HasPrefix(m.name, "race_") }

// maxRaceSteps is the longest a race's counterexample may be: a claim, its
// expiry, the reclaim in an open transaction, the stale outcome that waits
// on it, and the reclaim's commit.
const maxRaceSteps = 6

// checkRaceCatch holds a race mutant's counterexample (TestMutantsCaught)
// to what it must show: the waiting step, in at most maxRaceSteps steps.
func checkRaceCatch(t *testing.T, m protocolFile, r measured) {
	t.Helper()
	checkCatchShows(t, "race", m, r, "a waiting step", maxRaceSteps, " -> waiting on ")
}

// checkCatchShows holds a counterexample to the step it must show (every
// mark in the printed program) in at most max steps.
func checkCatchShows(t *testing.T, kind string, m protocolFile, r measured, step string, max int, marks ...string) {
	t.Helper()
	program := strings.Join(r.program, "\n")
	for _, mark := range marks {
		if !strings.Contains(program, mark) {
			t.Errorf("the %s mutant %s was caught without %s:\n%s", kind, m.name, step, program)
			break
		}
	}
	if r.steps > max {
		t.Errorf("the %s mutant %s was caught in %d steps, want at most %d:\n%s", kind, m.name, r.steps, max, program)
	}
}

// raceSectionMutants are a race mutant for each section that races:
// TestRacesNeedWaitingSteps shows each needs a waiting step, and CI's tier
// shrinks their catches (shrinksCatch).
var raceSectionMutants = []string{"race_complete_subquery", "race_retry_cte", "race_renew_join", "race_rescue_subquery"}

// TestRacesNeedWaitingSteps: the machine that skips every step that would
// wait (as it did before waiting steps; `outboxlab check --waiting=false`)
// misses a race mutant of each section, and so do the six scenarios: one
// step at a time the stale outcome's snapshot already shows the new
// generation, and the rescue's the fresh lease. The mutants are caught with waiting steps in
// TestMutantsCaught.
func TestRacesNeedWaitingSteps(t *testing.T) {
	honestSearch(t)
	// Each mutant must pass here: CI's pass budget, the nightly's default.
	passBudget(t)
	for _, name := range raceSectionMutants {
		m := protocolFileNamed(t, mutantDir, name)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if fails := failedScenarios(t, m.path); len(fails) > 0 {
				t.Errorf("the six scenarios catch %s (%v): it no longer needs a waiting step", name, fails)
			}
			cfg := mutantConfig()
			cfg.NoWaitingSteps = true
			h := harness(t, m.path, cfg)
			wantMissed(t, "waiting", name, search.Measure(t.Name(), h, h.Check))
			if n := h.Coverage.Counts()["waiting_step"]; n != 0 {
				t.Errorf("with waiting steps off the machine took %d", n)
			}
		})
	}
}

// wantMissed holds an ablated machine's run of a mutant (without kind
// steps) to a miss. A check that stopped with no violation is not a
// catch but a harness error: its report (rapid's, with the seed and the
// harness's message) is printed, since these tests draw a new seed each
// run and the program alone does not show the step that failed.
func wantMissed(t *testing.T, kind, name string, c search.Catch) {
	t.Helper()
	program := strings.Join(c.Program, "\n")
	switch {
	case c.Caught && c.Failure == nil:
		t.Errorf("without %s steps the check of %s stopped with no violation (a harness error, not a catch):\n%s\n%s", kind, name, c.Report, program)
	case c.Caught:
		t.Errorf("without %s steps the machine still catches %s: %v\n%s", kind, name, c.Failure, program)
	}
}

// protocolFileNamed is the protocol file dir/name.sql, as protocolFiles reads it.
func protocolFileNamed(t *testing.T, dir, name string) protocolFile {
	t.Helper()
	for _, m := range protocolFiles(t, dir) {
		if m.name == name {
			return m
		}
	}
	t.Fatalf("no %s.sql in %s", name, dir)
	return protocolFile{}
}
