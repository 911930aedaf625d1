package search

import (
	"flag"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestWithRapidFlagsLeavesThemUnset: a flag a search holds is not "set" to
// flag.Visit, which the suite's tests read as the user's own -rapid.seed
// or -rapid.checks (with FlagSet.Set it was, and after one verdict run the
// catalogue's tests kept a random seed instead of seed 1), and it is back
// as it was when the search is done.
func TestWithRapidFlagsLeavesThemUnset(t *testing.T) {
	before := rapidFlag("rapid.seed")
	visited := false
	WithRapidFlags(map[string]string{"rapid.seed": "7"}, func() {
		if got := rapidFlag("rapid.seed"); got != "7" {
			t.Errorf("rapid.seed = %s while held at 7", got)
		}
		flag.Visit(func(f *flag.Flag) { visited = visited || f.Name == "rapid.seed" })
	})
	if visited {
		t.Error("WithRapidFlags marked rapid.seed as set on the command line")
	}
	if got := rapidFlag("rapid.seed"); got != before {
		t.Errorf("rapid.seed = %s after the search, want %s", got, before)
	}
}

// budgetRun is what one search's rapid.Check ran: how many checks, from
// which first draw.
type budgetRun struct {
	checks int
	first  uint64
}

// twoSearchesAtOnce runs a fallback-like search (one check from seed 99,
// which waits inside its check) and, while it runs, a sibling search that
// wants the test's own budget (20 checks from seed 1), as the parallel
// subtests of the catalogue's tests do. start runs a search's rapid.Check
// with its flags; it is WithRapidFlags, or the way the flags were set
// before it (for the comparison). With siblingFirst the fallback's check
// waits until the sibling's first check has begun (unheld, it can);
// otherwise it gives the sibling a fifth of a second to try.
func twoSearchesAtOnce(t *testing.T, start func(set map[string]string, check func()), siblingFirst bool) (fallback, sibling budgetRun) {
	t.Helper()
	fallbackIn, siblingIn := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	run := func(out *budgetRun, set map[string]string, in chan struct{}, during func()) {
		defer wg.Done()
		tb := NewRecordingTB("budget")
		start(set, func() {
			rapid.Check(tb, func(rt *rapid.T) {
				x := rapid.Uint64().Draw(rt, "x")
				if out.checks == 0 {
					out.first = x
				}
				out.checks++
				if out.checks == 1 {
					close(in)
					during()
				}
			})
		})
	}
	wait := func() { time.Sleep(200 * time.Millisecond) }
	if siblingFirst {
		wait = func() {
			select {
			case <-siblingIn:
			case <-time.After(30 * time.Second):
				t.Error("the sibling never began a check while the fallback's was running")
			}
		}
	}
	go run(&fallback, map[string]string{"rapid.checks": "1", "rapid.seed": "99"}, fallbackIn, wait)
	<-fallbackIn
	go run(&sibling, nil, siblingIn, func() {})
	wg.Wait()
	return fallback, sibling
}

// TestSearchesHoldTheirOwnBudget answers whether rapid's global flags let
// one search's budget leak into another's: with the flags set around a
// check (as the search's fallback did), a sibling that started meanwhile
// ran one check from the fallback's seed (for a file that must pass, a
// false pass). Held (WithRapidFlags), each runs its own budget.
func TestSearchesHoldTheirOwnBudget(t *testing.T) {
	base := map[string]string{"rapid.checks": "20", "rapid.seed": "1", "rapid.nofailfile": "true"}
	WithRapidFlags(base, func() {}) // the values, checked
	restore := setForTest(t, base)
	defer restore()

	// The comparison: flags set and restored around the check, unheld.
	unheld := func(set map[string]string, check func()) {
		saved := map[string]string{}
		for name, value := range set {
			saved[name] = rapidFlag(name)
			setRapidFlag(name, value)
		}
		defer func() {
			for name, value := range saved {
				setRapidFlag(name, value)
			}
		}()
		check()
	}
	_, sibling := twoSearchesAtOnce(t, unheld, true)
	if sibling.checks != 1 {
		t.Fatalf("unheld: the sibling ran %d checks, want the fallback's one (the hazard this test exists for did not show)", sibling.checks)
	}

	fallback, sibling := twoSearchesAtOnce(t, WithRapidFlags, false)
	if fallback.checks != 1 {
		t.Errorf("held: the fallback ran %d checks, want 1", fallback.checks)
	}
	if sibling.checks != 20 {
		t.Errorf("held: the sibling ran %d checks, want its own 20", sibling.checks)
	}
	var own budgetRun
	WithRapidFlags(nil, func() {
		rapid.Check(NewRecordingTB("alone"), func(rt *rapid.T) {
			x := rapid.Uint64().Draw(rt, "x")
			if own.checks == 0 {
				own.first = x
			}
			own.checks++
		})
	})
	if sibling.first != own.first {
		t.Errorf("held: the sibling's first draw %d is not its own seed's %d", sibling.first, own.first)
	}
	for name, want := range base {
		if got := rapidFlag(name); got != want {
			t.Errorf("after both searches %s = %s, want the test's %s", name, got, want)
		}
	}
}

// setForTest sets the test's own budget, as the suite's tests do, and
// returns what puts the flags back.
func setForTest(t *testing.T, set map[string]string) func() {
	t.Helper()
	saved := currentFlags()
	for name, value := range set {
		setRapidFlag(name, value)
	}
	return func() {
		for name, value := range saved {
			setRapidFlag(name, value)
		}
	}
}
