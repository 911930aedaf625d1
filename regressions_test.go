package outboxlab

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/search"
)

// regressionDir keeps every counterexample the suite has found in a real
// protocol (the baseline's classes, every mutant), as the printed program.
const regressionDir = "testdata/regressions"

// TestRegressions replays every kept counterexample, with no random
// search: each must still fail on its protocol with the same rule at the
// same step, and the protocols it lists under "passes" (leased, or a
// correct variant with the sections the program uses) must pass it.
func TestRegressions(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(regressionDir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no regressions in %s (%v)", regressionDir, err)
	}
	var regs []regression
	for _, file := range files {
		reg, err := readRegression(file)
		if err != nil {
			t.Fatal(err)
		}
		regs = append(regs, reg)
	}
	// A harness for each failing protocol, made when its first regression
	// runs and closed after its last (the regressions are sorted by
	// protocol): fifty harnesses at once would take more connections than
	// the server has. The protocols that must pass (leased, a few correct
	// variants) are shared by many and kept to the end. A replay injects no
	// fault, so none is attached; the failing protocols get the mutants'
	// configuration, the passing ones the default.
	sort.SliceStable(regs, func(i, j int) bool { return regs[i].protocol < regs[j].protocol })
	harnesses := map[string]*machine.Harness{}
	passing := func(p string) *machine.Harness {
		if harnesses[p] == nil {
			harnesses[p] = harness(t, p, catalogueConfig())
		}
		return harnesses[p]
	}
	var failing *machine.Harness
	for i, reg := range regs {
		if failing == nil {
			failing = harness(t, reg.protocol, mutantConfig())
		}
		h := failing
		last := i+1 == len(regs) || regs[i+1].protocol != reg.protocol
		t.Run(reg.name, func(t *testing.T) {
			v, err := h.Replay(reg.program)
			replayed := h.Program()
			switch {
			case err != nil:
				t.Fatalf("%s: %v", reg.protocol, err)
			case v == nil:
				t.Fatalf("%s no longer fails this program; replayed:\n%s", reg.protocol, strings.Join(replayed, "\n"))
			case v.Rule != reg.rule:
				t.Errorf("%s fails with %q, want %q", reg.protocol, v.Rule, reg.rule)
			}
			if got, want := lastStep(replayed), lastStep(reg.lines); got != want || machine.CountSteps(replayed) != machine.CountSteps(reg.lines) {
				t.Errorf("%s fails at step %d %q, want step %d %q; replayed:\n%s", reg.protocol,
					machine.CountSteps(replayed), got, machine.CountSteps(reg.lines), want, strings.Join(replayed, "\n"))
			}
			for _, ref := range reg.passes {
				h := passing(ref)
				v, err := h.Replay(reg.program)
				switch {
				case err != nil:
					t.Errorf("%s: %v", ref, err)
				case v != nil:
					t.Errorf("%s fails the same program: %s\n%s", ref, v.Detail, strings.Join(h.Program(), "\n"))
				}
			}
		})
		if last {
			h.Close()
			h.Inst.Close()
			failing = nil
		}
	}
}

// regression is one file of testdata/regressions:
//
//	# protocol: testdata/mutants/complete_no_generation.sql
//	# rule: stale owner's complete applied
//	# passes: leased
//	setup: 2 workers (w1 w2), events e1
//	  1. w1.Claim() -> claimed e1 gen=1
//	...
type regression struct {
	name     string // the file name without .txt
	protocol string
	rule     string
	passes   []string
	lines    []string // the program as printed
	program  machine.Program
}

func readRegression(file string) (regression, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return regression{}, err
	}
	reg := regression{name: strings.TrimSuffix(filepath.Base(file), ".txt")}
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if key, value, ok := strings.Cut(strings.TrimPrefix(line, "# "), ": "); ok && strings.HasPrefix(line, "# ") {
			switch key {
			case "protocol":
				reg.protocol = value
			case "rule":
				reg.rule = value
			case "passes":
				reg.passes = strings.Fields(value)
			}
			continue
		}
		if !strings.HasPrefix(line, "#") {
			reg.lines = append(reg.lines, line)
		}
	}
	if reg.protocol == "" || reg.rule == "" {
		return reg, fmt.Errorf("%s: want '# protocol:' and '# rule:' lines", file)
	}
	if reg.program, err = machine.ParseProgram(reg.lines); err != nil {
		return reg, fmt.Errorf("%s: %w", file, err)
	}
	return reg, nil
}

// writingRegressions: OUTBOXLAB_WRITE_REGRESSIONS=1 keeps every
// counterexample a catalogue test finds in testdata/regressions.
func writingRegressions() bool { return os.Getenv("OUTBOXLAB_WRITE_REGRESSIONS") == "1" }

// keepRegression writes a counterexample to testdata/regressions when
// OUTBOXLAB_WRITE_REGRESSIONS=1; passes lists the protocols that must
// pass the same program.
func keepRegression(t *testing.T, name, protocol string, passes []string, c search.Catch) {
	t.Helper()
	if !writingRegressions() || c.Failure == nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# A counterexample the state machine found (%s); TestRegressions replays it.\n", t.Name())
	fmt.Fprintf(&b, "# protocol: %s\n# rule: %s\n", protocol, c.Failure.Rule)
	if len(passes) > 0 {
		fmt.Fprintf(&b, "# passes: %s\n", strings.Join(passes, " "))
	}
	for _, l := range c.Program {
		b.WriteString(strings.TrimRight(l, " ") + "\n")
	}
	if err := os.MkdirAll(regressionDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(regressionDir, name+".txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lastStep is the last numbered step of a program, without its number.
func lastStep(program []string) string {
	steps := stepTexts(program)
	if len(steps) == 0 {
		return ""
	}
	return steps[len(steps)-1]
}

// honestSearch makes the test's rapid.Check search from scratch: rapid
// replays a saved fail file before it searches, which would report the
// previous run's counterexample instantly and make time-to-catch
// meaningless. Fail files are not written either; the counterexamples are
// kept as programs in testdata/regressions. rapid's own shrinking is off:
// with every action enabled it needs a thousand checks and more and still
// leaves tens of steps, where search.Searcher.Minimize shrinks the printed program
// by replaying it, in a second or two.
func honestSearch(t *testing.T) {
	setRapidFlag(t, "rapid.nofailfile", "true")
	setRapidFlag(t, "rapid.shrinktime", "0s")
}

// shrinkBudget bounds search.Searcher.Minimize.
const shrinkBudget = 20 * time.Second

// setRapidFlag sets one of rapid's flags for the rest of the test (rapid
// reads them at every Check), unless the command line or its RAPID_
// environment variable set it: a nightly run's -rapid.checks=10000 wins.
func setRapidFlag(t *testing.T, name, value string) {
	t.Helper()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	if _, env := os.LookupEnv("RAPID_" + strings.ToUpper(strings.TrimPrefix(name, "rapid."))); set || env {
		return
	}
	// Value.Set, not flag.Set: flag.Set marks the flag set, and the next
	// test's check above would take it for the command line's and keep
	// whatever value it has (rapid.seed 0, a random seed, after the first
	// test that pinned seed 1 restored it).
	f := flag.Lookup(name)
	old := f.Value.String()
	if err := f.Value.Set(value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Value.Set(old) })
}
