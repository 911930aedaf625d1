package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/pgserver"
)

// TestDockerFallbackLinked: the command keeps the Docker fallback
// (pgserver/docker), which outboxlabtest leaves out. With no server
// configured and no local binaries, check either gets a container or
// stops with exit status 2 on Docker's own error, never on the fallback
// missing from the binary.
func TestDockerFallbackLinked(t *testing.T) {
	for _, k := range []string{"DATABASE_URL", "PGHOST", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("OUTBOXLAB_PG_BIN", t.TempDir())
	// An earlier test's shared server would serve the check (and one
	// check of leased is inconclusive): the command must look for one.
	pgserver.CloseShared()
	t.Cleanup(pgserver.CloseShared) // a failed start is kept: the tests after this one start their own
	var stdout, stderr bytes.Buffer
	code := run([]string{"check", "-checks", "1", "leased"}, &stdout, &stderr)
	if code == exitPass {
		return // a Docker daemon answered: the container was the server
	}
	msg := stderr.String()
	if code != exitBad || !strings.Contains(msg, "docker:") || strings.Contains(msg, "not linked into this binary") {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit %d on Docker's own error", code, msg, exitBad)
	}
}
