package sut

import (
	"strings"
	"testing"
)

// A worker's file holds the harness's sections only; reset belongs to it
// alone; each error points at FILE:LINE.
func TestParseWorkerFile(t *testing.T) {
	p, err := ParseWorker("relay", "relay.sql", "-- outboxlab: order=fifo\n-- name: reset\nDELETE FROM jobs;\n", "python3 relay.py")
	if err != nil {
		t.Fatal(err)
	}
	if p.Worker != "python3 relay.py" || !p.Has(Reset) || p.Has(Claim) {
		t.Fatalf("parsed %+v", p)
	}
	for _, tc := range []struct {
		worker, src, want string
	}{
		{"python3 relay.py", "-- outboxlab: order=fifo\n\n-- name: claim\nSELECT 1;\n", `relay.sql:3: section "claim": the worker (--worker) runs the claim`},
		{"python3 relay.py", "-- name: enqueue\nSELECT 1;\n-- name: rescue\nSELECT 1;\n", `relay.sql:3: section "rescue": the worker`},
		{"", "-- name: reset\nDELETE FROM jobs;\n", `relay.sql:1: section "reset" belongs to a worker's file`},
	} {
		_, err := parse("relay", "relay.sql", tc.src, tc.worker)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("parse(%q): %v, want %q...", tc.src, err, tc.want)
		}
	}
}
