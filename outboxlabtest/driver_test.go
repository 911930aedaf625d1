package outboxlabtest_test

import (
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/internal/drivertest"
	"github.com/outboxlab/outboxlab/outboxlabtest"
)

// The leased protocol written as a Go driver passes, as its file does:
// the same search, through the driver.
func TestCheckDriverPassesLeased(t *testing.T) {
	r := &recorder{name: t.Name()}
	outboxlabtest.CheckDriver(r, drivertest.LeasedName, small()...)
	if len(r.failed) != 0 {
		t.Fatalf("the leased driver failed CheckDriver:\n%s", r.report())
	}
	if len(r.logs) != 1 || !strings.Contains(r.logs[0], drivertest.LeasedName+": pass") {
		t.Fatalf("logs %q, want the pass line", r.logs)
	}
}

// A driver whose complete skips the generation check fails with the rule
// and a go test line, and no outboxlab check line: the command cannot load
// a Go driver.
func TestCheckDriverFailsNoGeneration(t *testing.T) {
	r := &recorder{name: t.Name()}
	outboxlabtest.CheckDriver(r, drivertest.NoGenName, small()...)
	report := r.report()
	for _, want := range []string{
		drivertest.NoGenName + ": FAIL: ",
		"counterexample (shrunk):",
		"stale owner's complete applied",
		"reproduce: go test -run '^TestCheckDriverFailsNoGeneration$' -rapid.checks=1 -rapid.seed=",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the failure does not contain %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, "outboxlab check") {
		t.Errorf("the failure names the outboxlab command, which cannot load a Go driver:\n%s", report)
	}
	res, err := outboxlabtest.RunDriver(drivertest.NoGenName, small()...)
	if err != nil || res.Result != "fail" || !strings.HasPrefix(res.Reproduce, "go test -rapid.checks=1 -rapid.seed=") {
		t.Fatalf("RunDriver: %+v, %v; want a counterexample with a go test line", res, err)
	}
}

func TestRunDriverUnregistered(t *testing.T) {
	_, err := outboxlabtest.RunDriver("never-registered")
	if err == nil || !strings.Contains(err.Error(), `no Go driver registered as "never-registered"`) {
		t.Fatalf("RunDriver of an unknown name: %v", err)
	}
}

// With Profile, a driver gets a verdict per property, as a file does; the
// driver without the generation check breaks one, and no line of the
// failure names the outboxlab command.
func TestCheckDriverProfile(t *testing.T) {
	r := &recorder{name: t.Name()}
	outboxlabtest.CheckDriver(r, drivertest.NoGenName, outboxlabtest.Profile(), outboxlabtest.Seed(1),
		sameUnderShort(30, 30), outboxlabtest.Faults(false))
	report := r.report() + strings.Join(r.logs, "\n")
	for _, want := range []string{drivertest.NoGenName + ": profile (", "✗ ", "breaks: "} {
		if !strings.Contains(report, want) {
			t.Errorf("the profile's failure does not contain %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, "outboxlab check") {
		t.Errorf("the profile names the outboxlab command, which cannot load a Go driver:\n%s", report)
	}
}
