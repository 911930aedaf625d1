package outboxlabtest_test

import (
	"slices"
	"testing"

	"github.com/outboxlab/outboxlab/outboxlabtest"
)

// python is Debian's interpreter, with python3-psycopg (.ci/run installs it).
const python = "/usr/bin/python3"

// TestPythonLeasedWorker runs the article's leased relay, written in
// Python as a worker executable (examples/python), through the whole
// suite: faults, kills, pauses, transactions. It must pass.
func TestPythonLeasedWorker(t *testing.T) {
	outboxlabtest.Check(t, "../examples/python/leased.sql",
		outboxlabtest.Worker(python+" ../examples/python/leased.py"), outboxlabtest.Budget(40, 30), outboxlabtest.Seed(1))
}

// TestPythonBaselineWorker runs the article's unsafe baseline as a Python
// worker: its profile must break exactly what the article's table found
// broken in the baseline, as the built-in baseline's does (TestProfiles):
// a stranded row, stale outcomes overwriting a newer claim, an expired
// owner finishing, a retry moving a sent row back.
func TestPythonBaselineWorker(t *testing.T) {
	res, err := outboxlabtest.Run("../examples/python/baseline.sql",
		outboxlabtest.Worker(python+" ../examples/python/baseline.py"), outboxlabtest.Profile(),
		outboxlabtest.Faults(false), outboxlabtest.Budget(40, 30), outboxlabtest.Seed(1))
	if err != nil {
		t.Fatal(err)
	}
	if res.Result != "fail" {
		t.Fatalf("result %s, want fail: %+v", res.Result, res)
	}
	var broken []string
	for _, p := range res.Profile {
		if p.Verdict == "breaks" {
			broken = append(broken, p.Property)
		}
	}
	want := []string{"no_stranded_row", "fencing", "strict_expiry", "terminal"}
	slices.Sort(broken)
	slices.Sort(want)
	if !slices.Equal(broken, want) {
		t.Errorf("broken properties %v, want %v (the article's table)\n%+v", broken, want, res.Profile)
	}
}
