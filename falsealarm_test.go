package outboxlab

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/search"
)

// sweepRuns is how many runs from random seeds each protocol that must
// pass gets in the false-alarm sweep: OUTBOXLAB_SWEEP_RUNS, else 10;
// sweepTokenRuns is the token files' on the topologies that forget
// (OUTBOXLAB_SWEEP_TOKEN_RUNS, else 20), where a false alarm once came
// one run in fifteen.
func sweepRuns(name string, fallback int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return fallback
}

// sweepPart is the part of the sweep a run takes: OUTBOXLAB_SWEEP_PART,
// "files" (the correct files, the equivalent mutants and the fixed
// libraries, on the single server) or a topology (every topology file on
// that topology), empty for the whole sweep. The whole takes hours longer
// than one CI job may run (the topology files' runs take about a minute
// each), so the nightly runs each part as a job of its own.
func sweepPart(t *testing.T) string {
	part := os.Getenv("OUTBOXLAB_SWEEP_PART")
	if part == "" || part == sweepFiles {
		return part
	}
	if _, err := pgserver.ParseTopology(part); err != nil {
		t.Fatalf("OUTBOXLAB_SWEEP_PART=%q: want %q or a topology: %v", part, sweepFiles, err)
	}
	return part
}

// sweepFiles is the sweep's part that holds the protocol files run on
// the single server (sweepPart).
const sweepFiles = "files"

// sweepTokenFiles are the token files swept twice as long on the
// topologies that forget.
var sweepTokenFiles = []string{"token_uuid", "token_random_bigint"}

// TestFalseAlarmSweep (the nightly's sweep job, OUTBOXLAB_SWEEP=1): every protocol that must pass (the
// correct files, the equivalent mutants, the fixed libraries, and every
// topology file on each topology it says it passes) passes the default
// check, faults on, from random seeds, run after run. A pinned seed shows
// that a verdict holds for that seed; a false alarm shows up one run in
// many, as the uuid token's did on async-standby before a claim had an
// identity of its own. A failure names its seed: `outboxlab check --seed`
// repeats it.
func TestFalseAlarmSweep(t *testing.T) {
	if os.Getenv("OUTBOXLAB_SWEEP") != "1" {
		t.Skip("the false-alarm sweep: the nightly's sweep job (OUTBOXLAB_SWEEP=1, or OUTBOXLAB_JOB=sweep .ci/run; docs/nightly.md)")
	}
	honestSearch(t)
	setRapidFlag(t, "rapid.seed", "0") // a random seed for every run
	runs := sweepRuns("OUTBOXLAB_SWEEP_RUNS", 10)
	tokenRuns := sweepRuns("OUTBOXLAB_SWEEP_TOKEN_RUNS", 20)
	part := sweepPart(t)
	sweep := func(t *testing.T, h *machine.Harness, n int) {
		for i := range n {
			c := search.Measure(t.Name(), h, h.Check)
			if c.Caught {
				t.Fatalf("run %d of %d: a false alarm (or a bug): %v\n%s\n%s", i+1, n, c.Failure, c.Report, strings.Join(c.Program, "\n"))
			}
			// Each run says so as it ends: a job cut by its timeout still
			// shows how many runs passed.
			t.Logf("run %d of %d passed: %d checks in %s", i+1, n, c.Checks, c.Total.Round(time.Second))
		}
		t.Logf("%d runs from random seeds passed", n)
	}
	for _, dir := range []string{correctDir, equivalentDir, fixedDir} {
		if part != "" && part != sweepFiles {
			break
		}
		for _, f := range protocolFiles(t, dir) {
			t.Run(dir+"/"+f.name, func(t *testing.T) {
				sweep(t, harness(t, f.path, machine.Default()), runs)
			})
		}
	}
	for _, f := range protocolFiles(t, topologyDir) {
		for _, want := range topologyExpectations(t, f.path) {
			if want.rule != "" || part != "" && part != string(want.topo) {
				continue
			}
			n := runs
			if want.topo.Rewinds() && slices.Contains(sweepTokenFiles, f.name) {
				n = tokenRuns
			}
			t.Run(f.name+"/"+string(want.topo), func(t *testing.T) {
				if want.topo == pgserver.Single {
					sweep(t, harness(t, f.path, machine.Default()), n)
					return
				}
				sweep(t, topologyHarness(t, want.topo, f.path, machine.Default()), n)
			})
		}
	}
}
