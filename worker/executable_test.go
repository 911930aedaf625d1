package worker

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/outboxlab/outboxlab/internal/drivertest"
)

// exeOf is the executable p's process runs, as the kernel says.
func exeOf(t *testing.T, p *Process) string {
	t.Helper()
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.c.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestFileWorkersRunTheSmallExecutable: a protocol file's worker runs
// cmd/outboxlab-worker, built by the go command, and answers as the
// harness's own binary would; a Go driver's worker runs the binary that
// registered the driver, the only one that has it.
func TestFileWorkersRunTheSmallExecutable(t *testing.T) {
	_, file := setup(t, v2Protocol)
	if got := filepath.Base(exeOf(t, file)); got != "outboxlab-worker" {
		small, err := smallExecutable()
		t.Fatalf("a file's worker runs %s, want outboxlab-worker (SmallExecutable: %q, %v)", got, small, err)
	}
	if c := do(t, file, Request{Op: "claim"}); len(c.Rows) != 2 {
		t.Fatalf("claim = %+v; want the batch of two rows", c)
	}
	_, goDriver := spawnDriver(t, drivertest.LeasedName)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if got := exeOf(t, goDriver); got != self {
		t.Fatalf("a Go driver's worker runs %s, want this test binary %s", got, self)
	}
}

// TestSelfOverride: OUTBOXLAB_WORKER_BIN=self runs every worker on the
// harness's own binary, as bench's comparisons and machines without a go
// command do.
func TestSelfOverride(t *testing.T) {
	t.Setenv(workerBinEnv, "self")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, file := setup(t, v2Protocol)
	if got := exeOf(t, file); got != self {
		t.Fatalf("with %s=self a file's worker runs %s, want %s", workerBinEnv, got, self)
	}
}
