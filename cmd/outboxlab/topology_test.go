package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
)

// TestTopologyFlagRefusesAnUnknownName: check and scenarios refuse a
// topology they do not know before anything runs, exit status 2, naming
// the ones they do.
func TestTopologyFlagRefusesAnUnknownName(t *testing.T) {
	for _, cmd := range []string{"check", "scenarios"} {
		var stdout, stderr bytes.Buffer
		code := run([]string{cmd, "--topology", "pooler", "leased"}, &stdout, &stderr)
		want := `unknown topology "pooler": want one of single, async-commit, async-standby, sync-standby, pooler-transaction, pooler-session`
		if code != exitBad || !strings.Contains(stderr.String(), want) || stdout.Len() != 0 {
			t.Errorf("%s --topology pooler: exit %d, stdout %q, stderr %q; want exit 2 and %q", cmd, code, stdout.String(), stderr.String(), want)
		}
	}
}

// TestCheckRunsOnTheTopology: check --topology async-commit runs on that
// deployment and says so: the result line names it, --json has it, and
// the reproduce line carries it and finds the same failure at its first
// check; without the flag the run is single's, named in --json only.
func TestCheckRunsOnTheTopology(t *testing.T) {
	withoutUserServer(t)
	var stdout, stderr bytes.Buffer
	code := run([]string{"check", "--topology", "async-commit", "--checks", "2", "--seed", "1", "--faults=false", "--shrink-time", "1s", "baseline"}, &stdout, &stderr)
	out := stdout.String()
	if code != exitFail || !strings.Contains(out, "baseline [async-commit]: FAIL: ") {
		t.Fatalf("exit %d, output:\n%s\nwant a counterexample on the line of baseline [async-commit] (stderr %s)", code, out, stderr.String())
	}
	_, reproduce, _ := strings.Cut(out, "  reproduce from the seed: ")
	reproduce, _, _ = strings.Cut(reproduce, "\n")
	if !strings.Contains(out, "  reproduce: outboxlab replay --faults=false --topology async-commit FILE baseline ") {
		t.Errorf("the replay line does not carry the topology:\n%s", out)
	}
	if !strings.HasPrefix(reproduce, "outboxlab check --checks 1 --seed ") || !strings.HasSuffix(reproduce, " --faults=false --topology async-commit baseline") {
		t.Fatalf("reproduce line %q does not carry the topology", reproduce)
	}
	args := append([]string{"--shrink-time", "1s"}, strings.Fields(strings.TrimPrefix(reproduce, "outboxlab check "))...)
	replay := checkJSON(t, args...)
	if replay.Result != "fail" || replay.Checks != 1 || replay.Topology != "async-commit" || replay.Reproduce != reproduce {
		t.Fatalf("the reproduce line gave %s after %d checks on %q, reproduce %q; want a failure at the first check on async-commit, the same line",
			replay.Result, replay.Checks, replay.Topology, replay.Reproduce)
	}

	single := checkJSON(t, "--checks", "1", "--steps", "3", "--seed", "1", "--faults=false", "leased")
	if single.Topology != "single" {
		t.Errorf("a run without --topology has topology %q, want single", single.Topology)
	}
	stdout.Reset()
	run([]string{"check", "--checks", "1", "--steps", "3", "--seed", "1", "--faults=false", "leased"}, &stdout, &stderr)
	if !strings.HasPrefix(stdout.String(), "leased: INCONCLUSIVE") {
		t.Errorf("on single the result line is %q, want it to start leased: INCONCLUSIVE", firstLineOf(stdout.String()))
	}
}

// TestConcurrentOnATopologyRestartsNothing: check --concurrent on
// async-commit runs on that deployment with its worker and network
// faults, and no server restart: the restart the concurrent mode injects
// on a single server would be a rewind there (Crash loses the commits
// since the last WAL write), which its model does not allow for.
func TestConcurrentOnATopologyRestartsNothing(t *testing.T) {
	withoutUserServer(t)
	var stdout, stderr bytes.Buffer
	code := run([]string{"check", "--concurrent", "--json", "--histories", "4", "--seed", "1", "--topology", "async-commit", "leased"}, &stdout, &stderr)
	var res concurrentResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("exit %d, output %q: %v (stderr %s)", code, stdout.String(), err, stderr.String())
	}
	if code != exitPass || res.Result != "pass" || res.Topology != "async-commit" {
		t.Fatalf("exit %d, result %s on %q (%s %s), want a pass on async-commit", code, res.Result, res.Topology, res.Violation, res.Error)
	}
	if res.Faults["db_restart"] != 0 || res.Faults["kill"] == 0 {
		t.Errorf("faults injected %v, want kills and no db_restart", res.Faults)
	}
	var text bytes.Buffer
	printConcurrent(&text, res)
	if !strings.HasPrefix(text.String(), "leased [async-commit]: pass: 4 histories") {
		t.Errorf("the result line is %q, want it to name the topology", firstLineOf(text.String()))
	}
}

// TestRelayReproduceNamesTheTopology: relay mode's reproduce line carries
// a topology other than single, and leaves single's out.
func TestRelayReproduceNamesTheTopology(t *testing.T) {
	p := &sut.Protocol{Name: "leased", File: "builtin/leased.sql"}
	f := checkFlags{faults: true, topo: topologyFlag{pgserver.SyncStandby}}
	if got, want := relayReproduce(p, 7, f), "outboxlab check --broker --checks 1 --seed 7 --topology sync-standby leased"; got != want {
		t.Errorf("relayReproduce on sync-standby = %q, want %q", got, want)
	}
	f.topo = topologyFlag{pgserver.Single}
	if got, want := relayReproduce(p, 7, f), "outboxlab check --broker --checks 1 --seed 7 leased"; got != want {
		t.Errorf("relayReproduce on single = %q, want %q", got, want)
	}
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// withoutUserServer unsets, for the test, the variables that name a
// server of the user's (DATABASE_URL, PG*): a topology is built from local
// server binaries and refuses to start beside one, so that the test runs
// also when the suite runs against such a server. (An empty PGPORT is not
// an unset one: the server takes it for its port.)
func withoutUserServer(t *testing.T) {
	for _, k := range []string{"DATABASE_URL", "PGHOST", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE"} {
		t.Setenv(k, "") // what restores it after the test
		os.Unsetenv(k)
	}
}
