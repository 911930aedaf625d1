package machine

import (
	"strings"
	"testing"
)

// TestProgramFaultsReadBack: each fault a step can carry is read from its
// comment into Step.Fault, and String prints it back, so that a program
// with faults is a value that survives printing.
func TestProgramFaultsReadBack(t *testing.T) {
	printed := `setup: 2 workers (w1 w2), events e1 e2
  1. w1.Claim() -> unknown   // request_lost, ambiguous: applied or not, decided by the next read
  2. w1.Begin() -> claimed e1 gen=1
  3. w1.Commit() -> unknown   // reply_lost, ambiguous: applied or not, decided by the next read
  4. w2.Claim() -> unknown   // stuck_commit, ambiguous: applied or not, decided by the next read
  5. Failover() -> ok
  6. Restart() -> ok
  7. w1.Complete(e1, gen=1) -> applied   // model: rejected`
	p, err := ParseProgram(strings.Split(printed, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ActRequestLost, "", ActReplyLost, ActStuckCommit, "", "", ""}
	if len(p.Steps) != len(want) {
		t.Fatalf("%d steps, want %d", len(p.Steps), len(want))
	}
	for i, s := range p.Steps {
		if s.Fault != want[i] {
			t.Errorf("step %d: fault %q, want %q", i+1, s.Fault, want[i])
		}
	}
	again, err := ParseProgram(strings.Split(p.String(), "\n"))
	if err != nil {
		t.Fatalf("%v\n%s", err, p.String())
	}
	if again.String() != p.String() {
		t.Errorf("printed again:\n%s\nwant:\n%s", again.String(), p.String())
	}
	// The model's note is the replay's to make again, not a fault.
	if got := strings.Split(p.String(), "\n")[7]; got != "  7. w1.Complete(e1, gen=1) -> applied" {
		t.Errorf("step 7 printed %q", got)
	}
}

// TestViolationNamesAnUnprintedStep: a violation line that names a step
// which failed before its line was printed reads as that step, a split
// part's mark included; one that repeats a printed step (its outcome
// follows, after the part mark too) is no step of its own.
func TestViolationNamesAnUnprintedStep(t *testing.T) {
	for _, c := range []struct {
		line string
		want string // the step read, "" for none
	}{
		{"   ^ violation: w2.Begin() blocked for 2s: ...", "w2.Begin()"},
		{"   ^ violation: w1.Retry(e1, gen=1) [2/2] failed: ERROR: ...", "w1.Retry(e1, gen=1) [2/2]"},
		{"   ^ violation: w1.Retry(e1, gen=1) [2/2] -> applied: stale owner's retry applied", ""},
		{"   ^ violation: w1.Claim() -> empty: claim returned nothing while e1 is claimable", ""},
		{"   ^ violation: w1.Claim(): the worker has 2 database connections", ""},
		{"   ^ violation: after the drain e1 is READY: an event never reached SENT (stranded row)", ""},
	} {
		op, ok := unloggedOp(strings.TrimSpace(c.line))
		got := ""
		if ok {
			got = op.String()
		}
		if got != c.want || NamesUnprintedStep(c.line) != (c.want != "") {
			t.Errorf("%q reads as step %q (NamesUnprintedStep %v), want %q", c.line, got, NamesUnprintedStep(c.line), c.want)
		}
	}
}
