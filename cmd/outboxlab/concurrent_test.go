package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestCheckConcurrent: `check --concurrent` passes leased (exit 0, every
// history linearizable) and refuses a budget that is not one (exit 2).
// That it fails a race mutant is TestSnapshotGuardRaceCaught's.
func TestCheckConcurrent(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"check", "--concurrent", "--histories", "3", "--ops", "80", "--html-dir", t.TempDir(), "leased"}
	if code := run(args, &stdout, &stderr); code != exitPass {
		t.Fatalf("exit %d, want 0\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "leased: pass: 3 histories") || !strings.Contains(stdout.String(), "every one linearizable") {
		t.Errorf("output %q, want a pass of 3 linearizable histories", stdout.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"check", "--concurrent", "--histories", "0", "leased"}, &stdout, &stderr); code != exitBad {
		t.Errorf("--histories 0: exit %d, want 2\n%s", code, stderr.String())
	}
}
