package outboxlabtest_test

import (
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/outboxlabtest"
)

// TestBadWorkers runs deliberately broken worker executables
// (testdata/workers/broken.py): each gets a failing verdict whose rule
// names what it did, whose detail names the worker and the request and
// ends with its stderr, and none hangs the run.
func TestBadWorkers(t *testing.T) {
	tests := []struct {
		mode string
		rule string // the violation
		also string // in the counterexample's detail
	}{
		{"notjson", "claim: the worker broke the worker protocol: a line on stdout that is not JSON", `"claimed one row, see you"`},
		{"wrongid", "claim: the worker broke the worker protocol: a reply to a request never sent", "in_reply_to"},
		{"wrongtype", `claim: the worker broke the worker protocol: a reply of type "ok" (want claim_ok or error)`, "claim request"},
		{"exit", "claim: the worker broke the worker protocol: the process exited", "exit status 4"},
		{"hang", "claim timed out", "did not return"},
		{"secondconn", "the worker opened a second database connection", "database connections named"},
		{"nosqlstate", "complete lost its connection with no fault injected", "server_error: something went wrong"},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			res, err := outboxlabtest.Run("../examples/python/leased.sql",
				outboxlabtest.Worker(python+" ../testdata/workers/broken.py "+tc.mode),
				outboxlabtest.Faults(false), outboxlabtest.Budget(20, 30), outboxlabtest.Seed(1))
			if err != nil {
				t.Fatal(err)
			}
			if res.Result != "fail" {
				t.Fatalf("result %s, want fail: %+v", res.Result, res)
			}
			if !strings.Contains(res.Violation, tc.rule) {
				t.Errorf("violation %q, want one containing %q", res.Violation, tc.rule)
			}
			detail := strings.Join(res.Counterexample, "\n")
			for _, want := range []string{tc.also, "broken worker: "} {
				if !strings.Contains(detail, want) {
					t.Errorf("the counterexample does not say %q:\n%s", want, detail)
				}
			}
		})
	}
}
