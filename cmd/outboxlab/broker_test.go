package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/relay"
)

// TestBrokerBadInputExitsTwo: relay mode reports bad input with exit
// status 2 before anything runs.
func TestBrokerBadInputExitsTwo(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "--broker", "--relay-variant", "nope", "leased"}, `unknown relay variant "nope"`},
		{[]string{"check", "--broker", "--profile", "leased"}, "--profile has no relay mode"},
		{[]string{"check", "--broker", "testdata/bad/syntax_error.sql"}, "testdata/bad/syntax_error.sql:"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tt.args, &stdout, &stderr); code != exitBad {
			t.Errorf("%v: exit %d, want 2; stderr %s", tt.args, code, stderr.String())
		}
		if !strings.Contains(stderr.String(), tt.want) || stdout.Len() != 0 {
			t.Errorf("%v: stderr %q, want %q and no output", tt.args, stderr.String(), tt.want)
		}
	}
}

// TestBrokerVariantFailsWithJSON: a broken relay is a counterexample (exit
// status 1) in --json, with the rule it breaks, the broker it ran on, the
// relay coverage and a reproduce line in relay mode.
func TestBrokerVariantFailsWithJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"check", "--broker", "--json", "--checks", "3", "--seed", "1", "--shrink-time", "2s",
		"--relay-variant", "key_with_generation", "leased"}, &stdout, &stderr)
	if code != exitFail {
		t.Fatalf("exit %d, want 1; stdout %s stderr %s", code, stdout.String(), stderr.String())
	}
	var res brokerResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if res.Result != "fail" || res.Violation != relay.RuleSameEventID || res.Broker != "embedded kfake" || res.Variant != "key_with_generation" {
		t.Errorf("result %+v", res)
	}
	if _, ok := res.Coverage[relay.ClassPublished]; !ok || len(res.Counterexample) == 0 {
		t.Errorf("coverage %v, counterexample %v", res.Coverage, res.Counterexample)
	}
	if !strings.HasPrefix(res.Reproduce, "outboxlab check --broker --checks 1 --seed ") || !strings.Contains(res.Reproduce, "--relay-variant key_with_generation") {
		t.Errorf("reproduce %q", res.Reproduce)
	}
}

// runBrokerCheckEnv makes this test binary run `outboxlab check --broker`
// on a budget too large to finish, so that a test can kill it mid-run.
const runBrokerCheckEnv = "OUTBOXLAB_TEST_RUN_BROKER_CHECK"

func init() {
	if os.Getenv(runBrokerCheckEnv) != "" && os.Getenv("OUTBOXLAB_WORKER") == "" {
		os.Exit(run([]string{"check", "--broker", "--checks", "1000000", "leased"}, os.Stdout, os.Stderr))
	}
}

// TestNothingOutlivesAKilledBrokerCheck SIGKILLs a relay-mode run with its
// workers, consumer, embedded broker and proxies up: every process it
// started ends, and its broker's data directory and its cluster go.
func TestNothingOutlivesAKilledBrokerCheck(t *testing.T) {
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), runBrokerCheckEnv+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pid := strconv.Itoa(cmd.Process.Pid)
	var started []int
	var dirs []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		started = descendants(cmd.Process.Pid)
		dirs, _ = filepath.Glob(filepath.Join(os.TempDir(), "outboxlab-kafka-"+pid+"-*"))
		if len(started) >= 4 && len(dirs) == 1 { // two workers and the consumer, at least, and the reapers
			break
		}
	}
	if len(dirs) != 1 {
		t.Fatalf("the run made broker data directories %v in 30s, want one", dirs)
	}
	time.Sleep(500 * time.Millisecond) // well into the checks
	started = descendants(cmd.Process.Pid)
	clusters, _ := filepath.Glob(filepath.Join(os.TempDir(), "outboxlab-pg-"+pid+"-*"))
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	left := append(dirs, clusters...)
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if len(living(started)) == 0 && len(existing(left)) == 0 {
			return
		}
	}
	t.Fatalf("15s after SIGKILL: %d of %d processes alive (%v), directories left: %v",
		len(living(started)), len(started), commands(living(started)), existing(left))
}
