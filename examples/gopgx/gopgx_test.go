package gopgx_test

import (
	"strings"
	"testing"

	"example.com/gopgx"
	"github.com/outboxlab/outboxlab/driver"
	"github.com/outboxlab/outboxlab/outboxlabtest"
)

// TestMain registers the drivers before outboxlabtest.Main: the worker
// processes are this binary re-executed, so they register them too, and
// find them by name.
func TestMain(m *testing.M) {
	driver.Register("gopgx", gopgx.Protocol{})
	driver.Register("gopgx-no-generation", gopgx.Protocol{Repo: gopgx.Repo{SkipGenerationCheck: true}})
	outboxlabtest.Main(m)
}

// budget reaches every coverage class of the leased protocol from seed 1
// (as outboxlabtest's own tests of it do); a nightly job raises it with
// RAPID_CHECKS.
func budget() []outboxlabtest.Option {
	return []outboxlabtest.Option{outboxlabtest.Seed(1), outboxlabtest.Budget(30, 30)}
}

// TestRelayRepository searches the repository's claims, sends and
// reschedules, interleaved with pauses, kills, expired leases and network
// faults, for a step the ownership model forbids.
func TestRelayRepository(t *testing.T) {
	outboxlabtest.CheckDriver(t, "gopgx", budget()...)
}

// TestMarkSentWithoutGenerationIsCaught: MarkSent without the generation
// check lets a worker whose lease ended mark a row another worker owns.
func TestMarkSentWithoutGenerationIsCaught(t *testing.T) {
	res, err := outboxlabtest.RunDriver("gopgx-no-generation", budget()...)
	if err != nil {
		t.Fatal(err)
	}
	program := strings.Join(res.Counterexample, "\n")
	if res.Result != "fail" || !strings.Contains(program, "stale owner's complete applied") {
		t.Fatalf("got %s %q:\n%s\nwant a stale owner's complete applied", res.Result, res.Violation, program)
	}
}
