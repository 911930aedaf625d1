package outboxlab

import (
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/search"
)

// Programs the shrinking once stopped at, one or more steps above the
// rule's minimum, each with the minimum it reaches now. Each is a
// counterexample a check with faults on found and shrank (docs/evidence.md,
// "Faults on and off"); the faults-off search of the same mutant found the
// shorter one.
func TestShrinkReachesTheMinimum(t *testing.T) {
	cases := []struct {
		name, mutant string
		program      string
		rule         string
		most         int // steps, the drain's included
	}{
		{
			// One worker's double complete, found as two owners'.
			name: "workers merged", mutant: "complete_applied_always_true",
			program: `setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Expire(e1) -> ok
  3. w2.Claim() -> claimed e1 gen=2
  4. w2.Complete(e1, gen=2) -> applied
  5. w1.Complete(e1, gen=1) -> applied`,
			rule: "complete applied to a SENT row", most: 3,
		},
		{
			// A stale complete shown through a waiting step, where the
			// expiry alone shows it with nothing left for the drain.
			name: "expiring begin made an expiry", mutant: "complete_applied_always_true",
			program: `setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. w2.Begin(expire e1) -> claimed e1 gen=2
  3. w1.Complete(e1, gen=1) -> waiting on w2`,
			rule: "stale owner's complete applied", most: 3,
		},
		{
			// The rescue of an expired lease, where the owner's retry
			// does the same in one step (the owner never reports on
			// the rescued claim).
			name: "rescue made the owner's retry", mutant: "rescue_never_buries",
			program: `setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Expire(e1) -> ok
  3. Rescue() -> ok
  4. MakeDue(e1) -> ok
  5. w1.Claim() -> claimed e1 gen=2`,
			rule: "rescue left an exhausted event alive", most: 6,
		},
		{
			// A split complete sent under a reclaim the failure does not
			// need: without the reclaim, the replay gives the split the
			// claim its worker holds (ReplayRebinding, both parts).
			name: "split part rebound", mutant: "split_complete_check_then_act",
			program: `setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. w1.Begin(expire e1) -> claimed e1 gen=2
  3. w1.Commit() -> ok
  4. w1.Complete(e1, gen=2) [1/2] -> ok
  5. Expire(e1) -> ok`,
			rule: "stale owner's complete applied", most: 4,
		},
		{
			// A fourth claim, found as a split one whose last part the
			// drain ran.
			name: "split made whole", mutant: "attempts_by_retry_only",
			program: `setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. w2.Claim() [1/2] -> ok
  3. Expire(e1) -> ok
  4. w1.Claim() -> claimed e1 gen=2
  5. Expire(e1) -> ok`,
			rule: "claim took e1 past its attempt budget", most: 7,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := harness(t, mutantDir+"/"+tc.mutant+".sql", mutantConfig())
			p, err := machine.ParseProgram(strings.Split(tc.program, "\n"))
			if err != nil {
				t.Fatal(err)
			}
			v, err := h.Replay(p)
			if err != nil || v == nil || !search.SameRule(v.Rule, tc.rule) {
				t.Fatalf("the program: violation %v, error %v; want %q:\n%s", v, err, tc.rule, strings.Join(h.Program(), "\n"))
			}
			// A minute: the shrinking stops as soon as nothing simpler
			// fails (seconds here), and a loaded machine's slow replays
			// must not end it before the minimum.
			c := search.On(h).Minimize(search.Catch{Caught: true, Program: h.Program(), Recorded: h.Recorded(), Failure: v}, time.Minute)
			shrunk := strings.Join(c.Program, "\n")
			if n := machine.CountSteps(c.Program); n > tc.most || !search.SameRule(c.Failure.Rule, tc.rule) {
				t.Fatalf("shrunk to %d steps, rule %q; want at most %d, %q:\n%s", n, c.Failure.Rule, tc.most, tc.rule, shrunk)
			}
		})
	}
}
