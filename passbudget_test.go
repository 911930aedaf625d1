package outboxlab

import (
	"os"
	"strconv"
	"testing"
)

// passBudget sets the checks per protocol of a test whose protocols must
// all pass (the correct files, the fixed libraries, the race and split
// mutants on a machine without waiting or split steps): OUTBOXLAB_PASS_CHECKS
// when it is set; else, in CI's tier, ciPassChecks (a tenth of the
// default: every protocol is still judged on every push);
// in the nightly's (OUTBOXLAB_NIGHTLY=1), the default budget. A mutant's
// budget is never cut: it runs until caught.
func passBudget(t *testing.T) {
	t.Helper()
	s := os.Getenv("OUTBOXLAB_PASS_CHECKS")
	if s == "" {
		if !nightly() {
			setRapidFlag(t, "rapid.checks", ciPassChecks)
		}
		return
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("OUTBOXLAB_PASS_CHECKS=%q: want a positive number", s)
	}
	setRapidFlag(t, "rapid.checks", strconv.Itoa(n))
}
