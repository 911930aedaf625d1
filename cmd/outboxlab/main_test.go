package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/worker"
)

func TestMain(m *testing.M) {
	worker.MainIfWorker()
	os.Exit(func() int {
		defer pgserver.CloseShared()
		return m.Run()
	}())
}

// TestBadProtocolExitsTwo: every malformed protocol file, text-level or
// found by the server, is reported as FILE:LINE with exit status 2 before
// anything runs. Each file's first line says what must be reported.
func TestBadProtocolExitsTwo(t *testing.T) {
	files, _ := filepath.Glob("testdata/bad/*.sql")
	more, _ := filepath.Glob("../../sut/testdata/bad/*.sql")
	files = append(files, more...)
	if len(files) < 8 {
		t.Fatalf("found %d bad protocol files, want the whole set", len(files))
	}
	for _, file := range files {
		for _, cmd := range []string{"scenarios", "check"} {
			t.Run(cmd+"/"+filepath.Base(file), func(t *testing.T) {
				want := wantLine(t, file)
				var stdout, stderr bytes.Buffer
				code := run([]string{cmd, file}, &stdout, &stderr)
				if code != exitBad {
					t.Fatalf("exit %d, want 2; stderr: %s", code, stderr.String())
				}
				if !strings.Contains(stderr.String(), file+":"+want) {
					t.Fatalf("stderr %q does not report %q", stderr.String(), file+":"+want)
				}
				if stdout.Len() != 0 {
					t.Fatalf("something ran: stdout %q", stdout.String())
				}
			})
		}
	}
}

func wantLine(t *testing.T, file string) string {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	want, ok := strings.CutPrefix(sc.Text(), "-- want: ")
	if !ok {
		t.Fatalf("%s: first line must be '-- want: LINE: message'", file)
	}
	return want
}

// TestBadInvocationExitsTwo: unknown commands, flags and protocols.
func TestBadInvocationExitsTwo(t *testing.T) {
	for _, args := range [][]string{{}, {"frobnicate"}, {"check", "--no-such-flag"}, {"check", "--workers", "1"}, {"scenarios", "no-such-protocol"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != exitBad {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
		if stderr.Len() == 0 {
			t.Errorf("%v: no message on stderr", args)
		}
	}
}

// TestHelpExitsZero: asking a command for its flags is not an error: the
// usage with every flag goes to stdout, exit status 0, and nothing runs.
func TestHelpExitsZero(t *testing.T) {
	flags := map[string][]string{
		"check":     {"usage: outboxlab check", "-checks", "-steps", "-seed", "-faults", "-shrink-time", "-workers", "-json"},
		"scenarios": {"usage: outboxlab scenarios", "-json"},
		"bench":     {"usage: outboxlab bench", "-json", "-quick", "-cpuprofile"},
	}
	for cmd, words := range flags {
		for _, help := range []string{"-h", "--help", "-help"} {
			var stdout, stderr bytes.Buffer
			if code := run([]string{cmd, help}, &stdout, &stderr); code != exitPass {
				t.Errorf("%s %s: exit %d, want 0; stderr %q", cmd, help, code, stderr.String())
			}
			for _, w := range words {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("%s %s: stdout %q does not contain %q", cmd, help, stdout.String(), w)
				}
			}
			if stderr.Len() != 0 {
				t.Errorf("%s %s: stderr %q, want nothing", cmd, help, stderr.String())
			}
		}
	}
	// A bad flag still exits 2, with the message and the usage on stderr.
	var stdout, stderr bytes.Buffer
	if code := run([]string{"check", "--no-such-flag"}, &stdout, &stderr); code != exitBad {
		t.Errorf("check --no-such-flag: exit %d, want 2", code)
	}
	if got := stderr.String(); !strings.Contains(got, "no-such-flag") || !strings.Contains(got, "usage: outboxlab check") || stdout.Len() != 0 {
		t.Errorf("check --no-such-flag: stderr %q, stdout %q; want the error and the usage on stderr only", got, stdout.String())
	}
}

// TestScenariosJSON: the article's table from the command line: leased
// passes six of six, baseline fails four and passes two, exit status 1.
func TestScenariosJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"scenarios", "--json", "leased", "baseline"}, &stdout, &stderr)
	if code != exitFail {
		t.Fatalf("exit %d, want 1 (baseline fails); stderr %s", code, stderr.String())
	}
	counts := map[string]map[string]int{}
	dec := json.NewDecoder(&stdout)
	for dec.More() {
		var r struct{ Protocol, Scenario, Result string }
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		if counts[r.Protocol] == nil {
			counts[r.Protocol] = map[string]int{}
		}
		counts[r.Protocol][r.Result]++
	}
	if counts["leased"]["pass"] != 6 || counts["leased"]["fail"] != 0 {
		t.Errorf("leased: %v, want 6 pass", counts["leased"])
	}
	if counts["baseline"]["pass"] != 2 || counts["baseline"]["fail"] != 4 {
		t.Errorf("baseline: %v, want 4 fail and 2 pass", counts["baseline"])
	}
	stdout.Reset()
	if code := run([]string{"scenarios", "leased"}, &stdout, &stderr); code != exitPass {
		t.Errorf("scenarios leased: exit %d, want 0", code)
	}
}

// TestCheckSameSeedSameRun: a seed finds the same failure at the same
// check, and the printed reproduce line reproduces it. (Shrinking is cut
// short here to keep the test fast, so only the failure is compared.)
func TestCheckSameSeedSameRun(t *testing.T) {
	first := checkJSON(t, "--seed", "42", "--faults=false", "--shrink-time", "1s", "baseline")
	second := checkJSON(t, "--seed", "42", "--faults=false", "--shrink-time", "1s", "baseline")
	if first.Result != "fail" || len(first.Counterexample) == 0 {
		t.Fatalf("baseline: %+v, want a counterexample", first)
	}
	if first.Violation != second.Violation || first.Checks != second.Checks {
		t.Fatalf("same seed, different runs: %q at check %d, then %q at check %d", first.Violation, first.Checks, second.Violation, second.Checks)
	}
	args := append([]string{"--shrink-time", "1s"}, strings.Fields(strings.TrimPrefix(first.Reproduce, "outboxlab check "))...)
	replay := checkJSON(t, args...)
	if replay.Result != "fail" || replay.Violation != first.Violation || replay.Checks != 1 {
		t.Fatalf("reproduce line %q gave %s %q after %d checks, want the same violation at the first check",
			first.Reproduce, replay.Result, replay.Violation, replay.Checks)
	}
}

func checkJSON(t *testing.T, args ...string) checkResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"check", "--json"}, args...), &stdout, &stderr)
	var res checkResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("check %v: exit %d, output %q: %v (stderr %s)", args, code, stdout.String(), err, stderr.String())
	}
	want := map[string]int{"pass": exitPass, "fail": exitFail, "inconclusive": exitInconclusive, "error": exitBad}[res.Result]
	if code != want {
		t.Fatalf("check %v: result %s with exit %d", args, res.Result, code)
	}
	return res
}

// TestCheckInconclusive: a run too short to reach the coverage classes
// the protocol's sections make possible proves nothing, and says so: exit
// status 3, result inconclusive, the missing classes named in --json and
// in the text.
func TestCheckInconclusive(t *testing.T) {
	res := checkJSON(t, "--checks", "1", "--steps", "1", "--seed", "7", "--faults=false", "leased")
	if res.Result != "inconclusive" {
		t.Fatalf("result %s, want inconclusive", res.Result)
	}
	if len(res.Uncovered) == 0 || !slices.Contains(res.Uncovered, "stale_retry_rejected") {
		t.Errorf("uncovered %v, want the classes one step cannot reach (stale_retry_rejected among them)", res.Uncovered)
	}
	if slices.Contains(res.Uncovered, "renew") || slices.Contains(res.Uncovered, "request_lost") {
		t.Errorf("uncovered %v names a class leased without faults cannot reach", res.Uncovered)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"check", "--checks", "1", "--steps", "1", "--seed", "7", "--faults=false", "leased"}, &stdout, &stderr)
	if code != exitInconclusive || !strings.Contains(stdout.String(), "INCONCLUSIVE") || !strings.Contains(stdout.String(), "stale_retry_rejected") {
		t.Errorf("exit %d, output:\n%s\nwant exit 3 naming the classes", code, stdout.String())
	}
}
