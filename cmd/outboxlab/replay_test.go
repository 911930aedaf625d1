package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/verdict"
)

// replayMutants are a few of the catalogue's mutants, one per class of
// rule: a stranded or out-of-order row, a stale outcome (whose seed 1
// counterexample holds a lost request), a backoff ignored, a batch too
// large, a race behind an open claim transaction.
var replayMutants = []string{"claim_ready_only", "complete_no_generation", "claim_ignores_backoff", "batch_one_too_many", "race_complete_cte"}

// TestReplayMutantCounterexamples: for each, the --json of a failing
// check (seed 1, faults on) replayed by outboxlab replay breaks the same
// rule, exit status 1, and prints the same program; so does the printed
// program, given its protocol.
func TestReplayMutantCounterexamples(t *testing.T) {
	dir := t.TempDir()
	for _, name := range replayMutants {
		t.Run(name, func(t *testing.T) {
			file := "../../testdata/mutants/" + name + ".sql"
			var stdout, stderr bytes.Buffer
			if code := run([]string{"check", "--json", "--checks", "30", "--seed", "1", "--shrink-time", "10s", file}, &stdout, &stderr); code != exitFail {
				t.Fatalf("check exit %d, want 1: %s", code, stderr.String())
			}
			var res verdict.Result
			if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
				t.Fatal(err)
			}
			if res.Program == nil || res.Settings == nil || res.Settings.Protocol != file || !strings.HasPrefix(res.Replay, "outboxlab replay FILE ") {
				t.Fatalf("the --json has no program to replay: %s", stdout.String())
			}
			path := filepath.Join(dir, name+".json")
			if err := os.WriteFile(path, stdout.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			printed := filepath.Join(dir, name+".txt")
			if err := os.WriteFile(printed, []byte(strings.Join(res.Counterexample, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"replay", path}, {"replay", printed, file}} {
				stdout.Reset()
				stderr.Reset()
				if code := run(args, &stdout, &stderr); code != exitFail {
					t.Fatalf("%v: exit %d, want 1: %s%s", args, code, stdout.String(), stderr.String())
				}
				out := stdout.String()
				for _, want := range []string{name + ": FAIL: " + res.Violation + " (replayed", "broken invariant: " + res.Violation + "\n",
					"    " + strings.Join(res.Counterexample, "\n    ") + "\n"} {
					if !strings.Contains(out, want) {
						t.Errorf("%v does not print %q:\n%s\nthe check's counterexample:\n%s", args, want, out, strings.Join(res.Counterexample, "\n"))
					}
				}
			}
		})
	}
}

// TestReplayProfileFromJSON: a profile's --json carries each broken
// property's counterexample as a value, and the first at the top with
// what its search relaxed, which outboxlab replay relaxes too and runs to
// the same violation.
func TestReplayProfileFromJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"check", "--json", "--profile", "--checks", "20", "--seed", "1", "--faults=false", "--shrink-time", "5s", "baseline"}, &stdout, &stderr); code != exitFail {
		t.Fatalf("check --profile exit %d, want 1: %s", code, stderr.String())
	}
	var res verdict.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	broken := 0
	for _, e := range res.Profile {
		if e.Verdict != "breaks" {
			continue
		}
		broken++
		if e.Program == nil || len(e.Program.Steps) == 0 {
			t.Errorf("the broken property %s has no program: %s", e.Property, stdout.String())
		}
	}
	if broken == 0 || res.Program == nil || res.Replay == "" {
		t.Fatalf("the profile has %d broken properties and no program to replay at the top: %s", broken, stdout.String())
	}
	path := filepath.Join(t.TempDir(), "profile.json")
	if err := os.WriteFile(path, stdout.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if code := run([]string{"replay", path}, &stdout, &stderr); code != exitFail {
		t.Fatalf("replay exit %d, want 1: %s%s", code, stdout.String(), stderr.String())
	}
	if res.Profile[0].Verdict == "breaks" && res.Settings.Relaxed != res.Profile[0].Relaxed {
		t.Errorf("the top program's settings relax %q, its search relaxed %q", res.Settings.Relaxed, res.Profile[0].Relaxed)
	}
	if want := "broken invariant: " + res.Violation + "\n"; !strings.Contains(stdout.String(), want) {
		t.Errorf("the replay does not print %q:\n%s", want, stdout.String())
	}
}

// TestReplayFaultFromJSON: a program value whose step carries a fault (a
// lost reply of a claim, which the baseline never reclaims) replays with
// the fault injected at that step, and the same object against leased
// passes: PROTOCOL replaces the object's.
func TestReplayFaultFromJSON(t *testing.T) {
	obj := `{"protocol":"baseline","topology":"single","result":"fail","violation":"claim returned nothing while e1 is claimable",` +
		`"program":{"workers":["w1","w2"],"events":["e1"],"steps":[{"op":"w1.Claim()","outcome":"unknown","fault":"reply_lost"}]},` +
		`"settings":{"protocol":"baseline","faults":true,"workers":4,"waiting":true,"split":true}}`
	path := filepath.Join(t.TempDir(), "fault.json")
	if err := os.WriteFile(path, []byte(obj+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"replay", path}, &stdout, &stderr); code != exitFail {
		t.Fatalf("exit %d, want 1: %s%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"1. w1.Claim() -> unknown   // reply_lost, ", "broken invariant: claim returned nothing while e1 is claimable"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("no %q in:\n%s", want, stdout.String())
		}
	}
	stdout.Reset()
	if code := run([]string{"replay", "--json", path, "leased"}, &stdout, &stderr); code != exitPass {
		t.Fatalf("against leased: exit %d, want 0: %s%s", code, stdout.String(), stderr.String())
	}
	var res verdict.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || res.Result != verdict.Pass || res.Protocol != "leased" {
		t.Errorf("against leased: %s (%v), want a pass", stdout.String(), err)
	}
}

// TestReplayBadInputExitsTwo: a file that is no program, a program with a
// step that cannot run, and a printed program without its protocol are
// FILE:LINE errors, exit status 2.
func TestReplayBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, text, protocol, want string }{
		{"not_json.json", "{\"protocol\": 3\n", "", ":1: not a check --json object"},
		{"no_program.json", `{"protocol":"leased","result":"pass"}` + "\n", "", ":1: no counterexample to replay"},
		{"bad_fault.json", `{"protocol":"x","result":"fail","program":{"workers":["w1","w2"],"events":["e1"],"steps":[{"op":"w1.Claim()","outcome":"unknown","fault":"lost"}]},"settings":{"protocol":"leased"}}` + "\n" +
			"", "", `:1: program step 1: no fault "lost"`},
		{"bad_relaxed.json", `{"protocol":"x","result":"fail","program":{"workers":["w1","w2"],"events":["e1"],"steps":[{"op":"w1.Claim()","outcome":"empty"}]},"settings":{"protocol":"leased","relaxed":"fencing+speed"}}` + "\n",
			"", `:1: settings: relaxed names "speed", which is no property`},
		{"bad_op.txt", "# a comment\nsetup: 2 workers (w1 w2), events e1\n  1. w1.Clam() -> empty\n", "leased", `:3: parse op "w1.Clam()"`},
		{"no_protocol.txt", "setup: 2 workers (w1 w2), events e1\n  1. w1.Claim() -> empty\n", "", ":1: a printed program needs its protocol"},
		{"cannot_run.txt", "setup: 2 workers (w1 w2), events e1\n  1. w1.Claim() -> claimed e1 gen=1\n  2. w2.Complete(e1, gen=1) -> applied\n", "leased",
			":3: step 2, w2.Complete(e1, gen=1), cannot run on leased: w2 never received that claim"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name)
			if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"replay", path}
			if c.protocol != "" {
				args = append(args, c.protocol)
			}
			var stdout, stderr bytes.Buffer
			if code := run(args, &stdout, &stderr); code != exitBad {
				t.Fatalf("exit %d, want 2: %s%s", code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stderr.String(), path+c.want) {
				t.Errorf("stderr %q does not report %q", stderr.String(), path+c.want)
			}
		})
	}
}
