package outboxlab

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/search"
	"github.com/outboxlab/outboxlab/sut"
)

// The topologies that forget (PROTOCOL-FORMAT.md, "Version 3"): the
// article's counter fence breaks when a crash under async-commit or a
// failover to a lagging standby loses a claim, since the next claim
// reissues its generation and the lost claim's owner finishes the new
// owner's claim.

// topologyServers are this binary's deployments, one per topology,
// started on first use and closed when the tests end (TestMain).
var topologyServers struct {
	mu   sync.Mutex
	srvs map[pgserver.Topology]*pgserver.Server
}

func topologyServer(t *testing.T, topo pgserver.Topology) *pgserver.Server {
	t.Helper()
	topologyServers.mu.Lock()
	defer topologyServers.mu.Unlock()
	if srv := topologyServers.srvs[topo]; srv != nil {
		return srv
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := pgserver.StartTopology(ctx, topo)
	if err != nil {
		t.Fatal(err)
	}
	if topologyServers.srvs == nil {
		topologyServers.srvs = map[pgserver.Topology]*pgserver.Server{}
	}
	topologyServers.srvs[topo] = srv
	return srv
}

func closeTopologyServers() {
	topologyServers.mu.Lock()
	defer topologyServers.mu.Unlock()
	for _, srv := range topologyServers.srvs {
		srv.Close()
	}
}

// topologyHarness installs protocol on topo's deployment, faults attached.
func topologyHarness(t *testing.T, topo pgserver.Topology, protocol string, cfg machine.Config) *machine.Harness {
	t.Helper()
	srv := topologyServer(t, topo)
	p, err := sut.Resolve(protocol)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inst, err := sut.Install(ctx, srv.ConnString(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inst.Close)
	h := machine.New(srv, inst, cfg)
	t.Cleanup(h.Close)
	closeFaults, err := h.AttachFaults()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeFaults)
	return h
}

// reissuedRule is the rule a counter fence breaks across a rewind; the
// outcome may be the stale owner's complete, retry or renew.
const reissuedRule = "applied on a reissued generation"

// maxRewindSteps is the bound on the leased counterexample: a
// durable point, a claim, the rewind, the reclaim, the stale outcome,
// with a step to spare.
const maxRewindSteps = 6

// TestLeasedBreaksOnRewindingTopologies: on async-commit and
// async-standby the built-in leased protocol fails, with a lost claim's
// owner finishing the claim that reissued its generation; the rewind step
// says it lost an acknowledged commit. Under async-commit, whose crash
// costs a tenth of a second, the counterexample is shrunk to at most six
// steps here; under async-standby every replay pays a failover (about a
// second), so the shrinking runs with OUTBOXLAB_TOPOLOGY_MATRIX=1 (the
// nightly's) and CI holds the catch itself to the rule.
//
// From rapid seed 5: seeds 1 to 5 each catch it on both
// (docs/topologies.md), and seed 5 is the one that needs the reissued
// action's own reclaim (machine/reissued.go): before it, seed 5 passed its
// 100 checks on async-commit with 16 rewinds that lost a claim; now it
// fails at check 17 on both. A seed of its own each run would assert what
// does not hold for every seed.
func TestLeasedBreaksOnRewindingTopologies(t *testing.T) {
	honestSearch(t)
	setRapidFlag(t, "rapid.seed", "5")
	for topo, rewind := range map[pgserver.Topology]string{pgserver.AsyncCommit: "Crash()", pgserver.AsyncStandby: "Failover()"} {
		t.Run(string(topo), func(t *testing.T) {
			h := topologyHarness(t, topo, "leased", machine.Default())
			shrink := topo == pgserver.AsyncCommit || fullTopologyMatrix()
			var c search.Catch
			if shrink {
				c = search.On(h).Search(t.Name(), 0)
			} else {
				c = search.Measure(t.Name(), h, h.Check)
			}
			program := strings.Join(c.Program, "\n")
			switch {
			case !c.Caught || c.Failure == nil:
				t.Fatalf("leased passed on %s", topo)
			case !strings.Contains(c.Failure.Rule, reissuedRule):
				t.Fatalf("leased on %s broke %q, want %q:\n%s", topo, c.Failure.Rule, reissuedRule, program)
			case shrink && machine.CountSteps(c.Program) > maxRewindSteps:
				t.Fatalf("counterexample of %d steps, want at most %d:\n%s", machine.CountSteps(c.Program), maxRewindSteps, program)
			case !strings.Contains(program, rewind+" -> rewound "):
				t.Fatalf("no %s in:\n%s", rewind, program)
			case shrink && !strings.Contains(program, rewind+" -> rewound 1 acknowledged commit"):
				t.Fatalf("no %s that lost the claim in:\n%s", rewind, program)
			}
			t.Logf("%s (check %d, found in %v, %v in all):\n%s", topo, c.Checks, c.ToFind.Round(time.Second), c.Total.Round(time.Second), program)
		})
	}
}

// fullTopologyMatrix reports whether the nightly's whole topology matrix
// runs (OUTBOXLAB_NIGHTLY=1, or OUTBOXLAB_TOPOLOGY_MATRIX=1 for this matrix
// alone): every evidence file on every topology, every counterexample
// shrunk.
func fullTopologyMatrix() bool {
	return nightly() || os.Getenv("OUTBOXLAB_TOPOLOGY_MATRIX") == "1"
}

// TestLeasedHoldsOnSyncStandby: a synchronous standby loses no
// acknowledged commit, so a failover is a restart to the model, and the
// article's protocol passes there with every fault on.
//
// CI runs a fifth of the default budget (a failover, lossless or not,
// costs about a second); the nightly's matrix the whole of it.
func TestLeasedHoldsOnSyncStandby(t *testing.T) {
	honestSearch(t)
	if !fullTopologyMatrix() {
		// Seed 3's twenty checks fail over twice, each with a stuck commit
		// (asserted below; seed 1 did until the race could expire a lease
		// inside a reclaim, which changed every later draw).
		setRapidFlag(t, "rapid.checks", "20")
		setRapidFlag(t, "rapid.seed", "3")
	}
	h := topologyHarness(t, pgserver.SyncStandby, "leased", machine.Default())
	c := search.On(h).Search(t.Name(), 0)
	if c.Caught {
		t.Fatalf("leased failed on sync-standby: %v\n%s", c.Failure, strings.Join(c.Program, "\n"))
	}
	counts := h.Coverage.Counts()
	t.Logf("failovers %d, with a commit stuck behind the stalled standby %d", counts[machine.CovDBRestart], counts[machine.CovStuckCommit])
	if counts[machine.CovDBRestart] == 0 || counts[machine.CovStuckCommit] == 0 {
		t.Fatal("no failover ran, or none with a stuck commit")
	}
}

// topologyDir holds the protocols whose verdict depends on the topology,
// each with a "-- expect: TOPOLOGY pass" or "-- expect: TOPOLOGY fail:
// RULE" line per topology it is held to.
const topologyDir = "testdata/topologies"

// ciTopologyFile is the correct token file CI runs on every topology (the
// issue's budget: leased and one token file each, the rest nightly).
const ciTopologyFile = "token_uuid"

// topologyExpectation is one "-- expect:" line.
type topologyExpectation struct {
	topo pgserver.Topology
	rule string // "" for a pass
}

func topologyExpectations(t *testing.T, path string) []topologyExpectation {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []topologyExpectation
	for i, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "-- expect: ")
		if !ok {
			continue
		}
		name, verdict, _ := strings.Cut(rest, " ")
		topo, err := pgserver.ParseTopology(name)
		rule, fails := strings.CutPrefix(verdict, "fail: ")
		if !fails {
			rule = ""
		}
		if err != nil || !fails && verdict != "pass" || fails && rule == "" {
			t.Fatalf("%s:%d: want -- expect: TOPOLOGY pass|fail: RULE, got %q", path, i+1, line)
		}
		out = append(out, topologyExpectation{topo, rule})
	}
	if len(out) == 0 {
		t.Fatalf("%s: no -- expect: lines", path)
	}
	return out
}

// TestTopologyEvidence: every file in testdata/topologies gets its
// expected verdict on every topology it names, from seed 1, at the default
// budget (the nightly's matrix, OUTBOXLAB_TOPOLOGY_MATRIX=1); CI runs the
// correct token file on every topology, at a fifth of it.
func TestTopologyEvidence(t *testing.T) {
	honestSearch(t)
	setRapidFlag(t, "rapid.seed", "1")
	if !fullTopologyMatrix() {
		setRapidFlag(t, "rapid.checks", "20")
	}
	for _, f := range protocolFiles(t, topologyDir) {
		for _, want := range topologyExpectations(t, f.path) {
			if !fullTopologyMatrix() && f.name != ciTopologyFile {
				continue
			}
			t.Run(f.name+"/"+string(want.topo), func(t *testing.T) {
				h := topologyHarness(t, want.topo, f.path, machine.Default())
				c := search.Measure(t.Name(), h, h.Check)
				program := strings.Join(c.Program, "\n")
				switch {
				case want.rule == "" && c.Caught:
					t.Fatalf("%s failed on %s: %v\n%s", f.name, want.topo, c.Failure, program)
				case want.rule != "" && (c.Failure == nil || !strings.Contains(c.Failure.Rule, want.rule)):
					t.Fatalf("%s on %s: caught %v (%v), want a failure %q\n%s", f.name, want.topo, c.Caught, c.Failure, want.rule, program)
				}
				if fullTopologyMatrix() && want.topo.Rewinds() && h.Coverage.Counts()[machine.CovRewind] == 0 {
					t.Errorf("no rewind lost anything on %s", want.topo)
				}
			})
		}
	}
}
