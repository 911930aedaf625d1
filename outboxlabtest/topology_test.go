package outboxlabtest_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/outboxlabtest"
	"github.com/outboxlab/outboxlab/pgserver"
)

// TestCheckOnATopology: with Topology(AsyncCommit), leased fails on that
// deployment with its faults on: a crash loses a claim, the next claim
// reissues its generation, and the lost claim's owner finishes it;
// baseline fails there with the topology on its result line and in its
// reproduce line.
func TestCheckOnATopology(t *testing.T) {
	withoutUserServer(t)
	res, err := outboxlabtest.Run("leased", outboxlabtest.Seed(1), outboxlabtest.Topology(pgserver.AsyncCommit))
	if err != nil {
		t.Fatal(err)
	}
	if res.Result != "fail" || res.Topology != "async-commit" || !strings.Contains(res.Violation, "applied on a reissued generation") {
		t.Fatalf("leased on async-commit: %s on %q (%s %s), want a reissued generation's failure on async-commit", res.Result, res.Topology, res.Violation, res.Error)
	}
	if !slices.ContainsFunc(res.Counterexample, func(s string) bool { return strings.Contains(s, "Crash() -> rewound") }) {
		t.Errorf("counterexample %q: want the crash that rewound", res.Counterexample)
	}

	r := &recorder{name: t.Name()}
	outboxlabtest.Check(r, "baseline", outboxlabtest.Topology("async-commit"), outboxlabtest.Seed(1), sameUnderShort(5, 30), outboxlabtest.Faults(false))
	report := r.report()
	for _, want := range []string{"outboxlab: baseline [async-commit]: FAIL: ", " --faults=false --topology async-commit baseline\n", "reproduce with go test: "} {
		if !strings.Contains(report, want) {
			t.Errorf("the failure does not contain %q:\n%s", want, report)
		}
	}
}

// TestBadTopologyFails: an unknown topology is bad input, reported before
// anything runs, naming the known ones.
func TestBadTopologyFails(t *testing.T) {
	_, err := outboxlabtest.Run("leased", outboxlabtest.Topology("pooler"))
	want := `outboxlabtest.Topology: unknown topology "pooler": want one of single, async-commit, async-standby, sync-standby, pooler-transaction, pooler-session`
	if err == nil || err.Error() != want {
		t.Fatalf("Topology(pooler): error %v, want %s", err, want)
	}
	r := &recorder{name: t.Name()}
	outboxlabtest.Check(r, "leased", outboxlabtest.Topology("pooler"))
	if !r.fatal || !strings.Contains(r.report(), want) {
		t.Fatalf("Check with Topology(pooler): fatal %v, report %q; want a fatal failure naming the topologies", r.fatal, r.report())
	}
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
