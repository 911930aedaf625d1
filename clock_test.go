package outboxlab

import (
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/machine"
)

// clockProgram claims e1 and e2, then retries e2 with a retry that takes
// longer than e1's lease (testdata/clock), then sends e1's owner's
// complete, which its guard refuses once the lease has run out.
var clockProgram = []string{
	"setup: 2 workers (w1 w2), events e1 e2",
	"  1. w1.Claim() -> claimed e1 gen=1",
	"  2. w2.Claim() -> claimed e2 gen=1",
	"  3. w2.Retry(e2, gen=1) -> applied",
	"  4. w1.Complete(e1, gen=1) -> rejected",
}

// TestLeaseRunOutByTheClockPasses: a lease of the declared length that
// runs out by the clock while another step takes longer than it is no
// violation (machine/clock.go). Before the harness knew the clock, step 3
// failed with "a retry changed another event's row" and, past that, "e1's
// lease is expired, model has it live", the false alarm a program slowed
// by failovers on a loaded machine met on a correct protocol. The program
// says which lease the clock ended. The second program's complete finds
// its own lease run out by the time its guard reads it: the outcome, not
// the rows read after it, is what the clock explains there.
func TestLeaseRunOutByTheClockPasses(t *testing.T) {
	h := harness(t, "testdata/clock/slow_first_attempt.sql", mutantConfig())
	printed := replayToAPass(t, h, clockProgram)
	if !strings.Contains(printed, "by the clock, a lease may have run out (e1's granted") {
		t.Errorf("the program does not say the clock ran e1's lease out:\n%s", printed)
	}
	if !strings.Contains(printed, "4. w1.Complete(e1, gen=1) -> rejected") {
		t.Errorf("the owner's complete after its lease ran out was not refused, or not replayed:\n%s", printed)
	}

	printed = replayToAPass(t, h, []string{
		"setup: 1 workers (w1), events e1",
		"  1. w1.Claim() -> claimed e1 gen=1",
		"  2. w1.Complete(e1, gen=1) -> rejected",
	})
	if !strings.Contains(printed, "2. w1.Complete(e1, gen=1) -> rejected\n     # the declared lease is 1s: by the clock, a lease may have run out (e1's granted") {
		t.Errorf("the complete's refusal is not laid to the clock:\n%s", printed)
	}
}

// TestLeaseShortOfTheDeclaredIsNotTheClocks: the same program on a claim
// that grants 1 s of a declared 10 s lease, with the retry of 1.5 s. The
// lease runs out before the declared length has passed by the clock, so
// the clock does not excuse it: the claim granted too little, and the
// verdict says so, not that the retry changed e1's row.
func TestLeaseShortOfTheDeclaredIsNotTheClocks(t *testing.T) {
	h := harness(t, "testdata/clock/short_grant.sql", mutantConfig())
	p, err := machine.ParseProgram(clockProgram)
	if err != nil {
		t.Fatal(err)
	}
	v, err := h.Replay(p)
	printed := strings.Join(h.Program(), "\n")
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, printed)
	}
	if v == nil || strings.Contains(printed, "by the clock") {
		t.Fatalf("a lease shorter than declared passed as the clock's: violation %v\n%s", v, printed)
	}
	if want := "claim granted less than the declared lease"; v.Rule != want || !strings.Contains(v.Detail, "e1's lease has run out") {
		t.Errorf("rule %q (%s), want %q for e1\n%s", v.Rule, v.Detail, want, printed)
	}
}

// replayToAPass replays a printed program on h, fails the test unless it
// replays without a violation, and returns the program as replayed.
func replayToAPass(t *testing.T, h *machine.Harness, program []string) string {
	t.Helper()
	p, err := machine.ParseProgram(program)
	if err != nil {
		t.Fatal(err)
	}
	v, err := h.Replay(p)
	printed := strings.Join(h.Program(), "\n")
	if err != nil || v != nil {
		t.Fatalf("replay: violation %v, err %v\n%s", v, err, printed)
	}
	return printed
}
