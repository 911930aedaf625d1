package outboxlabtest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestExampleModule does what a user of outboxlab does: go test ./... in
// a module of their own (a copy of examples/outbox, its replace pointed
// at this repository), whose one test calls Check on its protocol file.
// The good protocol passes; the mutant claim_pending_only (the claim's
// expired-lease branch deleted, so an abandoned message is never claimed
// again) fails, and the output holds the rule and the shrunk program. No
// network: the example's go.sum is committed and GOPROXY is off. The
// budget is 10 checks from seed 1, which reaches every coverage class of
// the good protocol.
func TestExampleModule(t *testing.T) {
	dir := copyExample(t)
	goTool := goCommand(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	run(t, dir, goTool, "mod", "edit", "-replace", "github.com/outboxlab/outboxlab="+root)

	out, err := goTest(dir, goTool)
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
	out, err = goTest(dir, goTool)
	if err == nil {
		t.Fatalf("go test ./... passed with the mutant claim_pending_only:\n%s", out)
	}
	for _, want := range []string{
		"--- FAIL: TestOutboxProtocol",
		"outbox: FAIL: claim returned nothing while e1 is claimable",
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

// copyExample copies examples/outbox into a temporary directory.
func copyExample(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "examples", "outbox")
	dst := filepath.Join(t.TempDir(), "outbox")
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
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
	if err != nil {
		t.Fatal(err)
	}
	return dst
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

// goTest runs go test ./... in dir with a small fixed budget and without
// the network, and returns its output.
func goTest(dir, goTool string) (string, error) {
	cmd := exec.Command(goTool, "test", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(environWithout("RAPID_", "OUTBOXLAB_SHARD", "OUTBOXLAB_ARTIFACTS", "GOFLAGS", "GOPROXY"),
		"RAPID_CHECKS=10", "RAPID_SEED=1", "GOPROXY=off", "GOFLAGS=-mod=readonly -buildvcs=false")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

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
