package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
)

// runCheckEnv makes this test binary run `outboxlab check` on a budget too
// large to finish, so that a test can kill it mid-run.
const runCheckEnv = "OUTBOXLAB_TEST_RUN_CHECK"

func init() {
	if os.Getenv(runCheckEnv) != "" && os.Getenv("OUTBOXLAB_WORKER") == "" {
		os.Exit(run([]string{"check", "--checks", "1000000", "leased"}, os.Stdout, os.Stderr))
	}
}

// TestNothingOutlivesAKilledCheck SIGKILLs an `outboxlab check` run in the
// middle of its state machine (worker processes running, proxies up, the
// cluster busy) and checks that every process it started ends and its
// cluster directory goes: no cleanup code of the killed run gets to run.
func TestNothingOutlivesAKilledCheck(t *testing.T) {
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), runCheckEnv+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var started []int
	deadline := time.Now().Add(30 * time.Second)
	workers := 0
	for time.Now().Before(deadline) && workers < 3 {
		time.Sleep(50 * time.Millisecond)
		started = descendants(cmd.Process.Pid)
		workers = 0
		for _, c := range commands(started) {
			// A protocol file's workers run outboxlab-worker; a Go
			// driver's, this binary.
			if strings.HasPrefix(c, exe) || strings.Contains(c, "/outboxlab-worker") {
				workers++
			}
		}
	}
	if workers < 3 {
		t.Fatalf("the check run started %d worker processes in 30s, want 3 or more", workers)
	}
	time.Sleep(300 * time.Millisecond) // well into the state machine
	started = descendants(cmd.Process.Pid)
	clusters, _ := filepath.Glob(filepath.Join(os.TempDir(), "outboxlab-pg-"+strconv.Itoa(cmd.Process.Pid)+"-*"))
	t.Logf("killing the run with %d processes below it, %d of them workers", len(started), workers)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	deadline = time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if len(living(started)) == 0 && len(existing(clusters)) == 0 {
			checkSchemasSwept(t, cmd.Process.Pid)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("15s after SIGKILL: %d of %d processes alive (%v), cluster directories left: %v",
		len(living(started)), len(started), commands(living(started)), existing(clusters))
}

// descendants lists every process below pid.
func descendants(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, field := range strings.Fields(string(b)) {
			child, _ := strconv.Atoi(field)
			out = append(out, child)
			out = append(out, descendants(child)...)
		}
	}
	return out
}

// living keeps the pids that are still running (a zombie is not).
func living(pids []int) []int {
	var out []int
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] == 'Z' {
			continue
		}
		out = append(out, pid)
	}
	return out
}

func commands(pids []int) []string {
	var out []string
	for _, pid := range pids {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		out = append(out, strings.ReplaceAll(string(b), "\x00", " "))
	}
	return out
}

func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// checkSchemasSwept: on a server the run did not own (DATABASE_URL), the
// killed run's schemas outlive it until a later run's sweep drops them;
// run that sweep now and check that nothing of the killed run is left.
func checkSchemasSwept(t *testing.T, pid int) {
	srv, err := pgserver.Shared()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	sut.SweepAbandonedSchemas(ctx, conn)
	var left int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_namespace
		WHERE obj_description(oid, 'pg_namespace') LIKE '% pid=' || $1`, strconv.Itoa(pid)).Scan(&left)
	if err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d schemas of the killed run left after the sweep", left)
	}
}
