package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestCheckConcurrentWorker: `check --concurrent --worker` runs a worker
// executable (the article's leased relay in Python) in the concurrent
// mode, driven from the parent, and passes it; relay mode with --worker is
// refused as bad input (exit 2), naming why.
func TestCheckConcurrentWorker(t *testing.T) {
	var stdout, stderr bytes.Buffer
	worker := "/usr/bin/python3 ../../examples/python/leased.py"
	args := []string{"check", "--concurrent", "--histories", "2", "--ops", "80", "--html-dir", t.TempDir(),
		"--worker", worker, "../../examples/python/leased.sql"}
	if code := run(args, &stdout, &stderr); code != exitPass {
		t.Fatalf("exit %d, want 0\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "leased: pass: 2 histories") || !strings.Contains(stdout.String(), "faults injected: ") {
		t.Errorf("output %q, want a pass of 2 linearizable histories with faults", stdout.String())
	}
	stdout.Reset()
	stderr.Reset()
	args = []string{"check", "--broker", "--worker", worker, "../../examples/python/leased.sql"}
	if code := run(args, &stdout, &stderr); code != exitBad || !strings.Contains(stderr.String(), "no publish request") {
		t.Errorf("--broker --worker: exit %d, want 2 naming the missing publish request\n%s", code, stderr.String())
	}
}
