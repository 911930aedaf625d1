package outboxlab

import (
	"os"
	"strconv"
	"testing"
)

// passBudget sets the checks per protocol of a test whose protocols must
// all pass (the correct files, the fixed libraries) from
// OUTBOXLAB_PASS_CHECKS, when it is set; otherwise the default budget
// stands. CI's second pass, on PostgreSQL 18.4, sets 30 (.ci/run): every
// protocol's verdict is still checked on that server, with a third of the
// checks, while the first pass and the nightly give each the full budget.
// A mutant's budget is never cut: it runs until caught.
func passBudget(t *testing.T) {
	t.Helper()
	s := os.Getenv("OUTBOXLAB_PASS_CHECKS")
	if s == "" {
		return
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("OUTBOXLAB_PASS_CHECKS=%q: want a positive number", s)
	}
	setRapidFlag(t, "rapid.checks", strconv.Itoa(n))
}
