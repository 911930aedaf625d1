package outboxlab

import (
	"os"
	"path/filepath"
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
// heartbeats compare the claim's token and pass; each file without that
// comparison (unguardedHeartbeat) fails with the refused step that changed
// a row.
func TestReissuedWorkerIdKeepsNoLeaseAlive(t *testing.T) {
	procrastinate, solidQueue := topologyDir+"/procrastinate_token.sql", topologyDir+"/solid_queue_token.sql"
	for _, tc := range []struct{ name, program, protocol, rule, crash string }{
		{procrastinate, "procrastinate_async_commit", procrastinate, "", "rewound 7"},
		{"procrastinate_token_unguarded_heartbeat", "procrastinate_async_commit", unguardedHeartbeat(t, procrastinate),
			"a rejected step changes nothing: e3 went INPROGRESS expired -> INPROGRESS live", "rewound 7"},
		{solidQueue, "solid_queue_async_commit", solidQueue, "", "rewound 9"},
		{"solid_queue_token_unguarded_heartbeat", "solid_queue_async_commit", unguardedHeartbeat(t, solidQueue),
			"a rejected step changes nothing: e1 went INPROGRESS expired -> INPROGRESS live", "rewound 9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, err := os.ReadFile("testdata/reissued/" + tc.program + ".program")
			if err != nil {
				t.Fatal(err)
			}
			p, err := machine.ParseProgram(strings.Split(strings.TrimRight(string(text), "\n"), "\n"))
			if err != nil {
				t.Fatal(err)
			}
			h := topologyHarness(t, pgserver.AsyncCommit, tc.protocol, machine.Default())
			replayed := replayExpecting(t, h, p, tc.name, tc.rule)
			if !strings.Contains(replayed, "Crash() -> "+tc.crash+" acknowledged commits") {
				t.Errorf("the replay's crash did not lose the commits it lost when found:\n%s", replayed)
			}
		})
	}
}

// unguardedHeartbeat is the token file at path as it was before its
// heartbeat compared the claim's token: its renew section without the
// first line that compares fence_token (the heartbeat's own; the applied
// check's comes after it), written to a temporary file.
func unguardedHeartbeat(t *testing.T, path string) string {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(text), "\n")
	inRenew, dropped := false, -1
	for i, l := range lines {
		if strings.HasPrefix(l, "-- name: ") {
			inRenew = l == "-- name: renew"
		}
		if inRenew && strings.Contains(l, "fence_token = @generation::uuid") {
			dropped = i
			break
		}
	}
	if dropped < 0 {
		t.Fatalf("%s: no renew section comparing fence_token to drop", path)
	}
	out := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(out, []byte(strings.Join(append(lines[:dropped:dropped], lines[dropped+1:]...), "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// replayExpecting replays p on h and fails t unless protocol (named so in
// failures) breaks rule, or, rule empty, passes; it returns the replayed
// program.
func replayExpecting(t *testing.T, h *machine.Harness, p machine.Program, protocol, rule string) string {
	t.Helper()
	v, err := h.Replay(p)
	replayed := strings.Join(h.Program(), "\n")
	switch {
	case err != nil:
		t.Fatalf("replay: %v\n%s", err, replayed)
	case rule == "" && v != nil:
		t.Fatalf("%s failed: %s\n%s", protocol, v.Rule, replayed)
	case rule != "" && (v == nil || !strings.Contains(v.Rule, rule)):
		t.Fatalf("%s: violation %v, want %q\n%s", protocol, v, rule, replayed)
	}
	return replayed
}
