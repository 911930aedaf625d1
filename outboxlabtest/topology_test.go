package outboxlabtest_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/outboxlabtest"
	"github.com/outboxlab/outboxlab/pgserver"
)

// TestCheckOnATopology: with Topology(AsyncCommit), leased passes on that
// deployment with its faults on, less the server restart (there a rewind
// the model does not allow for), and says the topology's fault was left
// out; baseline fails there with the topology on its result line and in
// its reproduce line.
func TestCheckOnATopology(t *testing.T) {
	withoutUserServer(t)
	res, err := outboxlabtest.Run("leased", append(small(), outboxlabtest.Topology(pgserver.AsyncCommit))...)
	if err != nil {
		t.Fatal(err)
	}
	if res.Result != "pass" || res.Topology != "async-commit" {
		t.Fatalf("leased on async-commit: %s on %q (%s %s), want a pass on async-commit", res.Result, res.Topology, res.Violation, res.Error)
	}
	if res.Coverage["db_restart"] != 0 || res.Coverage["request_lost"] == 0 {
		t.Errorf("coverage %v: want the network faults and no db_restart", res.Coverage)
	}
	if !slices.ContainsFunc(res.NotExercised, func(s string) bool { return strings.HasPrefix(s, "the async-commit server's fault (crash)") }) {
		t.Errorf("not exercised %q: want the async-commit server's fault named", res.NotExercised)
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
	want := `outboxlabtest.Topology: unknown topology "pooler": want one of single, async-commit, async-standby, sync-standby`
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
