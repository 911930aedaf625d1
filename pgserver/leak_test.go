package pgserver

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/internal/proc"
)

// holdEnv makes this test binary start a cluster, print its directory and
// postmaster pid, and wait to be killed.
const holdEnv = "OUTBOXLAB_TEST_HOLD_CLUSTER"

func TestMain(m *testing.M) {
	if os.Getenv(holdEnv) != "" {
		holdCluster()
		return
	}
	os.Exit(m.Run())
}

func holdCluster() {
	// The local cluster itself, even when DATABASE_URL names another server.
	bin, err := findBinaries()
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	c, err := startCluster(context.Background(), bin)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(c.dir, c.proc.Process.Pid)
	select {}
}

// TestNothingOutlivesAKilledRun starts a cluster in a child process, kills
// the child with SIGKILL (no cleanup code runs), and checks that the
// postmaster and the cluster directory are gone soon after.
func TestNothingOutlivesAKilledRun(t *testing.T) {
	if _, err := findBinaries(); err != nil {
		t.Skipf("the harness starts no local cluster here (%v): nothing of its own to leak", err)
	}
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), holdEnv+"=1")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("child said nothing: %v", err)
	}
	fields := strings.Fields(line)
	if len(fields) != 2 || fields[0] == "error" {
		cmd.Process.Kill()
		t.Fatalf("child could not start a cluster: %s", line)
	}
	dir := fields[0]
	pid, _ := strconv.Atoi(fields[1])
	if _, err := os.Stat(filepath.Join(dir, "data", "postmaster.pid")); err != nil {
		t.Fatalf("cluster not running in %s: %v", dir, err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		_, statErr := os.Stat(dir)
		if os.IsNotExist(statErr) && !proc.Alive(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("10s after SIGKILL: directory %s exists=%v, postmaster %d alive=%v", dir, exists(dir), pid, proc.Alive(pid))
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
