package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchOnlyBadInput: `bench --only` refuses a part it does not have, a
// history count out of range and a protocol, each with exit status 2 and
// a message naming the flag, before any server is started.
func TestBenchOnlyBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--only", "machine"}, `--only "machine"`},
		{[]string{"bench", "--only=concurrent", "--histories", "0"}, "--histories 0"},
		{[]string{"bench", "-only", "concurrent", "--histories", "5000"}, "--histories 5000"},
		{[]string{"bench", "--only", "concurrent", "leased"}, "takes no protocol"},
		{[]string{"bench", "--only", "concurrent", "--bogus"}, "flag provided but not defined"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(c.args, &stdout, &stderr); code != exitBad || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr.String(), exitBad, c.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"bench", "--only", "concurrent", "-h"}, &stdout, &stderr); code != exitPass || !strings.Contains(stdout.String(), "usage: outboxlab bench --only concurrent") {
		t.Errorf("-h: exit %d, stdout %q", code, stdout.String())
	}
}
