package outboxlab

import (
	"os"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/pgserver"
)

// TestReissuedWorkerIdKeepsNoLeaseAlive replays, on async-commit, the
// programs with which the false-alarm sweep once failed the token files of
// procrastinate and Solid Queue (testdata/reissued/*.program): a crash
// loses a claim together with the worker (or process) row it registered,
// and the id's sequence hands the same id to a later claim of the same
// job. The lost claim's worker then renews. Its heartbeat touched the row
// its handle names, which is now the new claim's: a refused renew that
// brought the job's expired lease back to life. The token files'
// heartbeats compare the claim's token and pass; the files as they were
// (testdata/reissued/*_unguarded_heartbeat.sql) fail with the refused step
// that changed a row.
func TestReissuedWorkerIdKeepsNoLeaseAlive(t *testing.T) {
	for _, tc := range []struct{ program, protocol, rule, crash string }{
		{"procrastinate_async_commit", topologyDir + "/procrastinate_token.sql", "", "rewound 7"},
		{"procrastinate_async_commit", "testdata/reissued/procrastinate_token_unguarded_heartbeat.sql",
			"a rejected step changes nothing: e3 went INPROGRESS expired -> INPROGRESS live", "rewound 7"},
		{"solid_queue_async_commit", topologyDir + "/solid_queue_token.sql", "", "rewound 9"},
		{"solid_queue_async_commit", "testdata/reissued/solid_queue_token_unguarded_heartbeat.sql",
			"a rejected step changes nothing: e1 went INPROGRESS expired -> INPROGRESS live", "rewound 9"},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			text, err := os.ReadFile("testdata/reissued/" + tc.program + ".program")
			if err != nil {
				t.Fatal(err)
			}
			p, err := machine.ParseProgram(strings.Split(strings.TrimRight(string(text), "\n"), "\n"))
			if err != nil {
				t.Fatal(err)
			}
			h := topologyHarness(t, pgserver.AsyncCommit, tc.protocol, machine.Default())
			v, err := h.Replay(p)
			replayed := strings.Join(h.Program(), "\n")
			switch {
			case err != nil:
				t.Fatalf("replay: %v\n%s", err, replayed)
			case tc.rule == "" && v != nil:
				t.Fatalf("%s failed: %s\n%s", tc.protocol, v.Rule, replayed)
			case tc.rule != "" && (v == nil || !strings.Contains(v.Rule, tc.rule)):
				t.Fatalf("%s: violation %v, want %q\n%s", tc.protocol, v, tc.rule, replayed)
			}
			if !strings.Contains(replayed, "Crash() -> "+tc.crash+" acknowledged commits") {
				t.Errorf("the replay's crash did not lose the commits it lost when found:\n%s", replayed)
			}
		})
	}
}
