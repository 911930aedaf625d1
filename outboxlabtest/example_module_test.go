package outboxlabtest_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestExampleModule does what a user of outboxlab does: go test ./... in
// a module of their own (a copy of examples/outbox, its replace pointed
// at this repository), whose one test calls Check on its protocol file.
// The good protocol passes; the mutant claim_pending_only (the claim's
// expired-lease branch deleted, so an abandoned message is never claimed
// again) fails, and the output holds the rule and the shrunk program. No
// network: the example's go.sum is committed and GOPROXY is off. The
// budget is 40 checks from seed 1, which reaches every coverage class of
// the good protocol (10 did, until the race action changed what seed 1
// draws: a margin, not a minimum).
func TestExampleModule(t *testing.T) {
	box := newSandbox(t)
	dir := box.module
	goTool := goCommand(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	run(t, dir, goTool, "mod", "edit", "-replace", "github.com/outboxlab/outboxlab="+root)

	out, err := box.goTest(goTool)
	if err != nil || !strings.Contains(out, "ok  \texample.com/outbox") {
		t.Fatalf("go test ./... with the good protocol: %v\n%s", err, out)
	}

	protocol := filepath.Join(dir, "db", "outbox.sql")
	src, err := os.ReadFile(protocol)
	if err != nil {
		t.Fatal(err)
	}
	const expiredBranch = "       OR (state = 'publishing' AND locked_until <= clock_timestamp())\n"
	if !strings.Contains(string(src), expiredBranch) {
		t.Fatalf("examples/outbox/db/outbox.sql no longer has the claim's line %q: update the mutant", expiredBranch)
	}
	mutant := strings.Replace(string(src), expiredBranch, "", 1)
	if err := os.WriteFile(protocol, []byte(mutant), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = box.goTest(goTool)
	if err == nil {
		t.Fatalf("go test ./... passed with the mutant claim_pending_only:\n%s", out)
	}
	// A claim that skips expired leases shows as one of two rules, as the
	// seed's program has another due row or none.
	if !strings.Contains(out, "outbox: FAIL: claim returned nothing while e1 is claimable") &&
		!strings.Contains(out, "outbox: FAIL: claim took e2 out of order: e1, an expired lease, is claimable first") {
		t.Errorf("the mutant's go test output names neither rule a claim that skips expired leases breaks:\n%s", out)
	}
	for _, want := range []string{
		"--- FAIL: TestOutboxProtocol",
		"counterexample (shrunk):",
		"1. w1.Claim() -> claimed e1 gen=1",
		"^ violation: ",
		"reproduce with go test: go test -run '^TestOutboxProtocol$' -rapid.checks=1 -rapid.seed=",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the mutant's go test output does not contain %q:\n%s", want, out)
		}
	}
}

// sandbox is a temporary directory for a copy of the example module, and
// the record of the inner go test's process group. A watchdog removes it,
// and kills that group, when the test ends or this process ends however
// it ends (SIGKILL included): nothing of the inner run outlives the outer
// one. (The inner run's own cluster has its own reaper.)
type sandbox struct {
	base   string
	module string
}

// watchdogScript waits for its stdin to close (the test ended, or this
// process died and the kernel closed the pipe), kills the group recorded
// in pgid if one is, and removes the directory.
const watchdogScript = `cat >/dev/null
pg=$(cat "$1/pgid" 2>/dev/null) && [ -n "$pg" ] && kill -9 -- "-$pg" 2>/dev/null
rm -rf "$1"
`

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	base, err := os.MkdirTemp("", "outboxlab-example-")
	if err != nil {
		t.Fatal(err)
	}
	sh := exec.Command("/bin/sh", "-c", watchdogScript, "outboxlab-example-watchdog", base)
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	w, err := sh.StdinPipe()
	if err == nil {
		err = sh.Start()
	}
	if err != nil {
		os.RemoveAll(base)
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(); sh.Wait() })
	s := &sandbox{base: base, module: filepath.Join(base, "outbox")}
	if err := copyTree(filepath.Join("..", "examples", "outbox"), s.module); err != nil {
		t.Fatal(err)
	}
	return s
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

// goTest runs go test ./... in the module copy with a small fixed budget
// and without the network, and returns its output. The go command and
// the test binary it starts run in a process group of their own, recorded
// for the watchdog while it runs.
func (s *sandbox) goTest(goTool string) (string, error) {
	var out bytes.Buffer
	cmd := exec.Command(goTool, "test", "-count=1", "./...")
	cmd.Dir = s.module
	cmd.Env = append(environWithout("RAPID_", "OUTBOXLAB_SHARD", "OUTBOXLAB_ARTIFACTS", "GOFLAGS", "GOPROXY"),
		"RAPID_CHECKS=40", "RAPID_SEED=1", "GOPROXY=off", "GOFLAGS=-mod=readonly -buildvcs=false")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	pgid := filepath.Join(s.base, "pgid")
	os.WriteFile(pgid, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	err := cmd.Wait()
	os.Remove(pgid) // the group is gone: its id may be reused
	return out.String(), err
}

// goCommand is the go command of the toolchain running this test.
func goCommand(t *testing.T) string {
	t.Helper()
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command: %v", err)
	}
	return p
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// environWithout is the environment without the variables whose names
// start with one of prefixes: the outer run's budget is not the inner's.
func environWithout(prefixes ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		keep := true
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}
