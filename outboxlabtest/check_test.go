package outboxlabtest_test

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/outboxlabtest"
)

// small is a budget that reaches every coverage class of leased from seed
// 1 with faults: 30 checks of 30 steps (10 did, until the wait actions
// changed what seed 1 draws; 30 leave a margin). Under -short, which divides the
// checks by 5 and the steps by 2, it asks for five times the checks and
// twice the steps, so that the run is the same one.
func small() []outboxlabtest.Option {
	return []outboxlabtest.Option{outboxlabtest.Seed(1), sameUnderShort(30, 30)}
}

// sameUnderShort is the budget of checks and steps, with and without
// -short: rapid's division undone.
func sameUnderShort(checks, steps int) outboxlabtest.Option {
	if testing.Short() {
		return outboxlabtest.Budget(5*checks, 2*steps)
	}
	return outboxlabtest.Budget(checks, steps)
}

// TestCheckPassesLeased: the article's protocol passes, and Check says so
// without failing the test.
func TestCheckPassesLeased(t *testing.T) {
	r := &recorder{name: t.Name()}
	outboxlabtest.Check(r, "leased", small()...)
	if len(r.failed) != 0 {
		t.Fatalf("leased failed Check:\n%s", r.report())
	}
	if len(r.logs) != 1 || !strings.Contains(r.logs[0], "leased: pass") {
		t.Fatalf("leased: logs %q, want the pass line", r.logs)
	}
}

// TestCheckFailsMutant: a protocol whose claim only takes READY rows (the
// stranded row) fails the test with the rule, the shrunk program and both
// reproduce commands; the seed in them finds the same rule at the first
// check alone.
func TestCheckFailsMutant(t *testing.T) {
	const mutant = "../testdata/mutants/claim_ready_only.sql"
	r := &recorder{name: t.Name()}
	outboxlabtest.Check(r, mutant, small()...)
	report := r.report()
	for _, want := range []string{
		"claim_ready_only: FAIL: ",
		"counterexample (shrunk):",
		"1. w1.Claim() -> claimed e1 gen=1",
		"^ violation: ",
		"broken invariant: ",
		"reproduce: outboxlab replay FILE ../testdata/mutants/claim_ready_only.sql   (FILE: ",
		"reproduce from the seed: outboxlab check --checks 1 --seed ",
		"reproduce with go test: go test -run '^TestCheckFailsMutant$' -rapid.checks=1 -rapid.seed=",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the failure does not contain %q:\n%s", want, report)
		}
	}
	if r.fatal {
		t.Errorf("a counterexample stopped the test with Fatal; want Error, so later checks still run")
	}
	res, err := outboxlabtest.Run(mutant, small()...)
	if err != nil || res.Result != "fail" {
		t.Fatalf("Run: %+v, %v; want a counterexample", res, err)
	}
	seed := strings.Fields(strings.TrimPrefix(res.Reproduce, "outboxlab check --checks 1 --seed "))[0]
	steps := 30 // the steps of small(), as rapid asks for them
	if testing.Short() {
		steps = 60
	}
	alone, err := outboxlabtest.Run(mutant, outboxlabtest.Seed(parseSeed(t, seed)), outboxlabtest.Budget(1, steps))
	if err != nil || alone.Result != "fail" || alone.Violation != res.Violation || alone.Checks != 1 {
		t.Fatalf("the failing seed %s alone: %s %q after %d checks (%v), want %q at the first check",
			seed, alone.Result, alone.Violation, alone.Checks, err, res.Violation)
	}
}

// TestCheckBadProtocol: a malformed file fails the test with FILE:LINE
// and what is wrong, as `outboxlab check` reports it; one error the text
// shows, one only the server finds.
func TestCheckBadProtocol(t *testing.T) {
	for _, file := range []string{"../sut/testdata/bad/missing_retry.sql", "../cmd/outboxlab/testdata/bad/claim_columns.sql"} {
		r := &recorder{name: t.Name()}
		outboxlabtest.Check(r, file, small()...)
		want := file + ":" + wantLine(t, file)
		if !r.fatal || !strings.Contains(r.report(), want) {
			t.Errorf("%s: fatal %v, report %q; want a fatal failure naming %q", file, r.fatal, r.report(), want)
		}
	}
}

// TestCheckInconclusive: a budget too small to reach the coverage classes
// fails the test: a pass that proved nothing is not a pass.
func TestCheckInconclusive(t *testing.T) {
	r := &recorder{name: t.Name()}
	outboxlabtest.Check(r, "leased", outboxlabtest.Seed(7), outboxlabtest.Budget(1, 1), outboxlabtest.Faults(false))
	if !strings.Contains(r.report(), "INCONCLUSIVE") || !strings.Contains(r.report(), "stale_retry_rejected") {
		t.Fatalf("one step of one check: %q, want an inconclusive failure naming the classes", r.report())
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

// TestOptionsReachTheRun: the workers, faults and steps given in code are
// the ones the search ran with, and the reproduce line repeats them.
func TestOptionsReachTheRun(t *testing.T) {
	steps, want := 20, "--steps 20"
	if testing.Short() {
		want = "--steps 10" // rapid halves the steps under -short
	}
	res, err := outboxlabtest.Run("../testdata/mutants/claim_ready_only.sql", outboxlabtest.Seed(1),
		outboxlabtest.Budget(10, steps), outboxlabtest.Workers(2), outboxlabtest.Faults(false))
	if err != nil || res.Result != "fail" {
		t.Fatalf("Run: %+v, %v; want a counterexample", res, err)
	}
	for _, w := range []string{want, "--workers 2", "--faults=false"} {
		if !strings.Contains(res.Reproduce, w) {
			t.Errorf("reproduce line %q does not repeat %q", res.Reproduce, w)
		}
	}
	if _, ok := res.Coverage["request_lost"]; ok || !strings.HasPrefix(res.Counterexample[0], "setup: 2 workers") {
		t.Errorf("coverage %v, counterexample %q: want two workers and no faults", res.Coverage, res.Counterexample[0])
	}
}

// TestCheckProfile: with Profile, a protocol that breaks properties fails
// the test with a verdict per property, each broken one with its rule.
func TestCheckProfile(t *testing.T) {
	r := &recorder{name: t.Name()}
	outboxlabtest.Check(r, "baseline", outboxlabtest.Profile(), outboxlabtest.Seed(1), sameUnderShort(5, 30), outboxlabtest.Faults(false))
	report := r.report()
	// The budget is small (5 checks a search): which of baseline's other
	// broken properties it reaches depends on what the seed draws, so
	// only the first, and a line for every property, are required.
	// TestProfiles pins baseline's whole profile at the default budget.
	for _, want := range []string{"baseline: profile (", "✗ no_stranded_row", "breaks: ", " terminal ", " attempt_budget "} {
		if !strings.Contains(report, want) {
			t.Errorf("the profile's failure does not contain %q:\n%s", want, report)
		}
	}
}
