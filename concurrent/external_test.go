package concurrent

import (
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/sut"
)

// python is Debian's interpreter, with python3-psycopg (.ci/run installs it).
const python = "/usr/bin/python3"

// runWorker is run for a worker executable: file holds the harness's
// sections, command is the worker.
func runWorker(t *testing.T, file, command string, cfg Config) Result {
	t.Helper()
	p, err := sut.ResolveWorker(file, command)
	if err != nil {
		t.Fatal(err)
	}
	return runProtocol(t, p, cfg)
}

// TestWorkerExecutableLeasedIsLinearizable: the article's leased relay in
// Python (examples/python), a worker executable, which serves no drive of
// its own, is driven from the parent one request at a time with the draws
// a Go worker makes, under every fault: its process killed, stopped, its
// connection cut. Every history must be linearizable.
func TestWorkerExecutableLeasedIsLinearizable(t *testing.T) {
	res := runWorker(t, "../examples/python/leased.sql", python+" ../examples/python/leased.py", quick(t, 6))
	if res.Failure != nil {
		t.Fatalf("leased.py failed in history %d: %s: %s\n%s\n%s", res.Failure.History, res.Failure.Rule, res.Failure.Detail,
			strings.Join(res.Failure.Ops, "\n"), res.Failure.HTML)
	}
	t.Logf("%d histories, %d operations, faults %v, mix %v", res.Histories, res.Ops, res.Faults, res.ConcurrentMix)
	if res.Histories == 0 || res.Ops < res.Histories*100 {
		t.Fatalf("%d histories, %d operations: the run did not run", res.Histories, res.Ops)
	}
	for _, kind := range []string{"kill", "pause", "request_lost", "reply_lost"} {
		if res.Faults[kind] == 0 {
			t.Errorf("no %s injected (%v)", kind, res.Faults)
		}
	}
	for _, kind := range []string{"Claim", "Begin", "Commit", "Complete", "Retry"} {
		n := 0
		for key, k := range res.ConcurrentMix {
			if key == kind || strings.HasPrefix(key, kind+" ") {
				n += k
			}
		}
		if n == 0 {
			t.Errorf("no %s in the histories' concurrent parts (%v)", kind, res.ConcurrentMix)
		}
	}
}

// TestWorkerExecutableBaselineFails: the article's unsafe baseline in
// Python fails the concurrent mode: without a lease, a row whose claimer
// never sent its outcome is stranded, and the drain's claim finds nothing
// the model says is claimable.
func TestWorkerExecutableBaselineFails(t *testing.T) {
	cfg := quick(t, 10)
	cfg.Faults = false
	res := runWorker(t, "../examples/python/baseline.sql", python+" ../examples/python/baseline.py", cfg)
	f := res.Failure
	if f == nil {
		t.Fatalf("baseline.py passed %d histories (%d operations)", res.Histories, res.Ops)
	}
	t.Logf("history %d: %s: %s\n%s", f.History, f.Rule, f.Detail, strings.Join(f.Ops, "\n"))
	if f.Rule != "not linearizable" {
		t.Fatalf("baseline.py failed for %s (%s), want not linearizable", f.Rule, f.Detail)
	}
}
