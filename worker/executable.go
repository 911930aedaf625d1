package worker

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/outboxlab/outboxlab/internal/proc"
)

// Which executable a Go worker process runs. A kill restarts a worker, and
// a default check has about one and a half kills, so a worker's start-up
// (exec, the runtime, every package initialiser of the binary, the
// connection) is paid many times a second. The executable the harness
// runs in (a test binary, the outboxlab command) links everything its
// user imported: re-executed, it costs two to three times what a binary
// of pgx and the worker loop costs (docs/performance.md). So a worker for
// a protocol file runs cmd/outboxlab-worker, built once by the go command
// into its build cache; a worker that needs code only the harness's own
// binary has (a Go driver the test registered, relay mode's broker
// client) re-executes that binary.
//
// OUTBOXLAB_WORKER_BIN overrides the choice: a path to an outboxlab-worker
// executable, or "self" for the harness's own binary every time.
const workerBinEnv = "OUTBOXLAB_WORKER_BIN"

// workerPackage is the small worker's import path.
const workerPackage = "github.com/outboxlab/outboxlab/cmd/outboxlab-worker"

var small struct {
	once sync.Once
	path string
	err  error
}

// needsSelf says whether spec's worker must run the harness's own binary.
func needsSelf(spec Spec) bool {
	return spec.Relay || spec.Statements == nil || spec.Statements.GoDriver != ""
}

// executableFor is the executable a Go worker for spec runs.
func executableFor(spec Spec) (string, error) {
	if needsSelf(spec) || os.Getenv(workerBinEnv) == "self" {
		return os.Executable()
	}
	if path, err := smallExecutable(); err == nil {
		return path, nil
	}
	// Without a go command or the module's source (an outboxlab binary
	// copied to a machine without Go), the harness's own binary serves
	// every worker as well, at its start-up cost.
	return os.Executable()
}

// smallExecutable is the path of cmd/outboxlab-worker as the harness runs
// it, or why it has none (then workers re-execute the harness's binary).
func smallExecutable() (string, error) {
	small.once.Do(func() { small.path, small.err = findSmall() })
	return small.path, small.err
}

func findSmall() (string, error) {
	if p := os.Getenv(workerBinEnv); p != "" && p != "self" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", workerBinEnv, p, err)
		}
		return p, nil
	}
	gocmd, err := exec.LookPath(proc.GoCommand())
	if err != nil {
		return "", fmt.Errorf("no go command to build %s with", workerPackage)
	}
	// First from the working directory, whose module requires this one
	// (a test binary runs in its package's directory), so the worker
	// links the same versions the harness does; then from this module's
	// own source, for an outboxlab command run elsewhere.
	dirs := []string{""}
	if root := moduleRoot(); root != "" {
		dirs = append(dirs, root)
	}
	var errs []string
	for _, dir := range dirs {
		path, err := goRunPath(gocmd, dir)
		if err == nil {
			return path, nil
		}
		errs = append(errs, err.Error())
	}
	return "", fmt.Errorf("build %s: %s", workerPackage, strings.Join(errs, "; "))
}

// goRunPath asks the go command where its cached build of the small worker
// is: `go run -exec echo` prints the executable's path instead of running
// it. The go command caches what go run links (Go 1.24 and later), in
// its build cache, which it trims itself; the first run links into a
// temporary directory it removes on return, so a path that is gone by
// then is asked for again, now from the cache.
func goRunPath(gocmd, dir string) (string, error) {
	for range 2 {
		cmd := exec.Command(gocmd, "run", "-exec", "echo", workerPackage)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("in %q: %v: %s", dir, err, strings.TrimSpace(stderr.String()))
		}
		path := strings.TrimSpace(string(out))
		if _, err := os.Stat(path); err == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("in %q: the go command printed no lasting path for its build", dir)
}

// moduleRoot is this module's source directory as the compiler saw it
// ("" when the binary was built with -trimpath).
func moduleRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	return filepath.Dir(filepath.Dir(file))
}
