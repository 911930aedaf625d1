package search

import (
	"testing"

	"github.com/outboxlab/outboxlab/machine"
)

// The program complete_applied_always_true's faults-on shrinking once
// stopped at: the rule is one worker's double complete, which only a
// merge of the two workers (then delta debugging) reaches.
const twoOwners = `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Expire(e1) -> ok
  3. w2.Claim() -> claimed e1 gen=2
  4. w2.Complete(e1, gen=2) -> applied
  5. w1.Complete(e1, gen=1) -> applied
`

func TestWithWorkersMerged(t *testing.T) {
	p := mustParse(t, twoOwners)
	c := withWorkersMerged(p)
	if len(c) != 1 {
		t.Fatalf("%d candidates, want 1 (w2 into w1)", len(c))
	}
	want(t, p, c[0], true, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Expire(e1) -> ok
  3. w1.Claim() -> claimed e1 gen=2
  4. w1.Complete(e1, gen=2) -> applied
  5. w1.Complete(e1, gen=1) -> applied`)
	if c := withWorkersMerged(mustParse(t, `setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1`)); len(c) != 0 {
		t.Errorf("a worker with no steps merged: %v", c)
	}
}

func TestWithStepsGiven(t *testing.T) {
	p := mustParse(t, twoOwners)
	c := withStepsGiven(p)
	if len(c) != 2 {
		t.Fatalf("%d candidates, want 2 (each of w2's steps to w1)", len(c))
	}
	// Last step first: w2's complete given to w1.
	want(t, p, c[0], true, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Expire(e1) -> ok
  3. w2.Claim() -> claimed e1 gen=2
  4. w1.Complete(e1, gen=2) -> applied
  5. w1.Complete(e1, gen=1) -> applied`)
	want(t, p, c[1], true, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Expire(e1) -> ok
  3. w1.Claim() -> claimed e1 gen=2
  4. w2.Complete(e1, gen=2) -> applied
  5. w1.Complete(e1, gen=1) -> applied`)
}

// attempts_by_retry_only's shrinking once stopped at a fourth claim
// found through a split claim whose last part the drain ran.
const splitInDrain = `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. w2.Claim() [1/2] -> ok
  3. Expire(e1) -> ok
  4. w1.Claim() -> claimed e1 gen=2
  5. Expire(e1) -> ok
`

func TestWithSplitsWhole(t *testing.T) {
	p := mustParse(t, splitInDrain)
	c := withSplitsWhole(p)
	if len(c) != 2 {
		t.Fatalf("%d candidates, want 2", len(c))
	}
	// The drain ran the last part: whole at the program's end, then
	// where the first part was.
	want(t, p, c[0], true, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Expire(e1) -> ok
  3. w1.Claim() -> claimed e1 gen=2
  4. Expire(e1) -> ok
  5. w2.Claim() -> ok`)
	want(t, p, c[1], true, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. w2.Claim() -> ok
  3. Expire(e1) -> ok
  4. w1.Claim() -> claimed e1 gen=2
  5. Expire(e1) -> ok`)

	p = mustParse(t, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. w1.Complete(e1, gen=1) [1/2] -> ok
  3. Expire(e1) -> ok
  4. w1.Complete(e1, gen=1) [2/2] -> applied
`)
	c = withSplitsWhole(p)
	if len(c) != 2 {
		t.Fatalf("%d candidates, want 2", len(c))
	}
	want(t, p, c[0], true, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Expire(e1) -> ok
  3. w1.Complete(e1, gen=1) -> applied`)
	want(t, p, c[1], true, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. w1.Complete(e1, gen=1) -> applied
  3. Expire(e1) -> ok`)
}

func TestWithoutPairs(t *testing.T) {
	p := mustParse(t, splitInDrain)
	c := withoutPairs(p)
	if len(c) != 6 { // the pairs of five steps that are not neighbours
		t.Fatalf("%d candidates, want 6", len(c))
	}
	want(t, p, c[0], true, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. w2.Claim() [1/2] -> ok
  3. w1.Claim() -> claimed e1 gen=2`)
	long := mustParse(t, splitInDrain+`  6. Expire(e1) -> ok
  7. Expire(e1) -> ok
  8. Expire(e1) -> ok
  9. Expire(e1) -> ok
 10. Expire(e1) -> ok
 11. Expire(e1) -> ok
 12. Expire(e1) -> ok
 13. Expire(e1) -> ok
 14. Expire(e1) -> ok
 15. Expire(e1) -> ok
 16. Expire(e1) -> ok
 17. Expire(e1) -> ok`)
	if c := withoutPairs(long); c != nil {
		t.Errorf("%d candidates for 17 steps, want none: the square is too dear there", len(c))
	}
}

func TestSplitPartsAreLessSimple(t *testing.T) {
	whole := withSplitsWhole(mustParse(t, splitInDrain))[0]
	if !simplerThan(whole, mustParse(t, splitInDrain)) {
		t.Error("the same steps with a split made whole are not simpler")
	}
}

// A rebinding replay that renamed the events keeps its names, though the
// candidate's rank lower: the candidate's outcomes are not what ran.
func TestKeptFormIsTheRun(t *testing.T) {
	c := mustParse(t, `
setup: 2 workers (w1 w2), events e1 e2
  1. w1.Claim() -> empty
  2. Expire(e1) -> ok
  3. w1.Claim() -> claimed e1 gen=2
  4. w1.Retry(e1, gen=1) -> applied`)
	ran := mustParse(t, `
setup: 2 workers (w1 w2), events e1 e2
  1. w1.Claim() -> claimed e2 gen=1
  2. Expire(e2) -> ok
  3. w1.Claim() -> claimed e2 gen=2
  4. w1.Retry(e2, gen=1) -> applied`)
	if got := keptForm(c, ran); got.String() != ran.String() {
		t.Errorf("kept\n%s\nwant the run\n%s", got, ran)
	}
	longer := mustParse(t, ran.String()+"\n  5. Expire(e1) -> ok")
	if got := keptForm(c, longer); got.String() != c.String() {
		t.Errorf("kept the longer run\n%s", got)
	}
}

// complete_applied_always_true's faults-on shrinking once stopped at a
// stale complete shown through a waiting step, one drain step longer than
// the expiry alone shows it.
func TestWithExpiresForExpiringBegins(t *testing.T) {
	p := mustParse(t, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. w2.Begin(expire e1) -> claimed e1 gen=2
  3. w1.Complete(e1, gen=1) -> waiting on w2`)
	c := withExpiresForExpiringBegins(p)
	if len(c) != 1 {
		t.Fatalf("%d candidates, want 1", len(c))
	}
	want(t, p, c[0], true, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Expire(e1) -> ok
  3. w1.Complete(e1, gen=1) -> waiting on w2`)
	if unfinished(p) != 1 || unfinished(c[0]) != 0 {
		t.Errorf("unfinished: %d and %d, want 1 (the open Begin) and 0", unfinished(p), unfinished(c[0]))
	}
}

// lenient_no_generation's faults-on shrinking once stopped at a claim
// transaction left open for the drain, where an autocommit claim shows the
// same stale complete without a waiting step.
func TestOpenBeginMadeAClaim(t *testing.T) {
	p := mustParse(t, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Expire(e1) -> ok
  3. w2.Begin() -> claimed e1 gen=2
  4. w1.Complete(e1, gen=1) -> waiting on w2`)
	h := Searcher{Harness: &machine.Harness{Cfg: machine.Default()}}
	wantText := `setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Expire(e1) -> ok
  3. w2.Claim() -> claimed e1 gen=2
  4. w1.Complete(e1, gen=1) -> waiting on w2`
	for _, c := range h.simpler(p) {
		if c.String() == wantText {
			if !simplerThan(c, p) {
				t.Fatalf("the autocommit form is not simpler")
			}
			return
		}
	}
	t.Fatalf("no candidate\n%s", wantText)
}

// rescue_never_buries' faults-on shrinking once stopped one step above
// the faults-off minimum: the rescue of an expired lease where the owner's
// retry does the same.
func TestWithRetriesForRescues(t *testing.T) {
	p := mustParse(t, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Expire(e1) -> ok
  3. Rescue() -> ok
  4. MakeDue(e1) -> ok
  5. w1.Claim() -> claimed e1 gen=2`)
	c := withRetriesForRescues(p)
	if len(c) != 1 {
		t.Fatalf("%d candidates, want 1", len(c))
	}
	want(t, p, c[0], true, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. w1.Retry(e1, gen=1) -> applied
  3. MakeDue(e1) -> ok
  4. w1.Claim() -> claimed e1 gen=2`)
	if c := withRetriesForRescues(mustParse(t, `setup: 2 workers (w1 w2), events e1
  1. Expire(e1) -> ok
  2. Rescue() -> ok`)); len(c) != 0 {
		t.Errorf("a row nobody claimed given a retry: %v", c)
	}
}

// The rescuer's path to a stale complete (River's): the owner reports on
// the claim the rescue took back, so the rescue is what the program
// shows, and no owner's retry stands in for it.
func TestWithRetriesForRescuesKeepsAStaleOwnersRescue(t *testing.T) {
	const rescued = `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Expire(e1) -> ok
  3. Rescue() -> ok
  4. MakeDue(e1) -> ok
`
	for _, tc := range []struct {
		name, after string
		want        int
	}{
		{"another worker's claim, then the stale complete", "  5. w2.Claim() -> claimed e1 gen=2\n  6. w1.Complete(e1, gen=1) -> applied", 0},
		{"the owner's own claim again, then the stale complete", "  5. w1.Claim() -> claimed e1 gen=2\n  6. w1.Complete(e1, gen=1) -> applied", 0},
		// An outcome whose line shows the later claim's generation is
		// that claim's: the rescue of the first may be the owner's retry.
		{"the owner's complete of its later claim", "  5. w1.Claim() -> claimed e1 gen=2\n  6. w1.Complete(e1, gen=2) -> applied", 1},
	} {
		if c := withRetriesForRescues(mustParse(t, rescued+tc.after)); len(c) != tc.want {
			t.Errorf("%s: %d candidates, want %d:\n%v", tc.name, len(c), tc.want, c)
		}
	}
}

// A split that came after two of three statements opens its section with
// [2/3], not [1/3].
func TestWithSplitsWholeAfterTwoStatements(t *testing.T) {
	p := mustParse(t, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() [2/3] -> ok
  2. w1.Claim() [3/3] -> claimed e1 gen=1
  3. Expire(e1) -> ok`)
	c := withSplitsWhole(p)
	if len(c) != 2 {
		t.Fatalf("%d candidates, want 2", len(c))
	}
	want(t, p, c[0], true, `
setup: 2 workers (w1 w2), events e1
  1. w1.Claim() -> claimed e1 gen=1
  2. Expire(e1) -> ok`)
	if !opensSection(p, 0) || opensSection(p, 1) {
		t.Errorf("opensSection: %v, %v; want the [2/3] part to open the section, the [3/3] not", opensSection(p, 0), opensSection(p, 1))
	}
}
