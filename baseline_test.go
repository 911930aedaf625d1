package outboxlab

import (
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/search"
)

// baselineClass is one of the article's failures of the baseline, searched
// for on its own and shrunk to its minimal program.
type baselineClass struct {
	name    string
	actions []string        // Config.Actions: what the class needs, and nothing that reaches another class first
	events  int             // events per check, if the class needs fewer than the default
	iso     machine.Isolate // the places the stranded row shows, switched off for the other classes
	rule    string          // the broken invariant the failure names
	program []string        // the minimal program: every numbered step, the drain's included
}

// baselineClasses are the baseline's four failure classes. Each program is
// the shortest that can show its class, because each step in it is needed:
var baselineClasses = []baselineClass{
	{
		// A row is stranded only if a claim committed on it (step 1) and
		// that claim was abandoned; the drain then must expire the lease
		// (step 2) before the policy lets anyone take the row, and it is
		// the drain's claim (step 3) that finds nothing. With no step
		// before the drain, its claims and completes just succeed. One
		// event: with a second one due, the drain's claim would take it
		// instead, and the same stranding would read "claim took e2 out
		// of order".
		name:    "stranded_row",
		actions: []string{machine.ActClaim},
		events:  1,
		rule:    "claim returned nothing while e1 is claimable",
		program: []string{
			"w1.Claim() -> claimed e1 gen=1",
			"Expire(e1) -> ok",
			"w1.Claim() -> empty",
		},
	},
	{
		// A stale complete needs a claim (step 1), something that makes it
		// stale (step 2: the lease expires; the baseline cannot reclaim, so
		// a newer generation cannot arise through it) and the late complete
		// itself (step 3). Under the strict policy an expired owner is
		// rejected even before anyone reclaims, so no reclaim is needed.
		name:    "stale_complete_applied",
		actions: []string{machine.ActClaim, machine.ActExpire, machine.ActStaleComplete},
		iso:     machine.Isolate{NoDrain: true, NoReclaim: true},
		rule:    "stale owner's complete applied",
		program: []string{
			"w1.Claim() -> claimed e1 gen=1",
			"Expire(e1) -> ok",
			"w1.Complete(e1, gen=1) -> applied",
		},
	},
	{
		// As the stale complete: claim, expire, the late retry.
		name:    "stale_retry_applied",
		actions: []string{machine.ActClaim, machine.ActExpire, machine.ActStaleRetry},
		iso:     machine.Isolate{NoDrain: true, NoReclaim: true},
		rule:    "stale owner's retry applied",
		program: []string{
			"w1.Claim() -> claimed e1 gen=1",
			"Expire(e1) -> ok",
			"w1.Retry(e1, gen=1) -> applied",
		},
	},
	{
		// A row is SENT only after a claim (step 1) and its complete
		// (step 2); the retry with that same claim (step 3) is the one
		// that must be rejected.
		name:    "sent_row_retried",
		actions: []string{machine.ActClaim, machine.ActComplete, machine.ActStaleRetry},
		iso:     machine.Isolate{NoDrain: true},
		rule:    "retry applied to a SENT row",
		program: []string{
			"w1.Claim() -> claimed e1 gen=1",
			"w1.Complete(e1, gen=1) -> applied",
			"w1.Retry(e1, gen=1) -> applied",
		},
	},
}

// TestBaselineShrinksToMinimal: the state machine finds each of the
// baseline's failure classes and shrinks it to its minimal program, whose
// text names the broken invariant. The programs are the suite's own
// account of the article's failures (docs/evidence.md prints them).
func TestBaselineShrinksToMinimal(t *testing.T) {
	honestSearch(t)
	for _, c := range baselineClasses {
		t.Run(c.name, func(t *testing.T) {
			cfg := machine.Default()
			cfg.Actions, cfg.Faults = c.actions, false
			if c.events > 0 {
				cfg.MinEvents, cfg.MaxEvents = c.events, c.events
			}
			h := harness(t, "baseline", cfg)
			catch := search.On(h).Minimize(search.Measure("baseline/"+c.name, h, h.IsolatedCheck(c.iso)), shrinkBudget)
			if !catch.Caught || catch.Failure == nil {
				t.Fatalf("the state machine did not catch the baseline's %s:\n%s", c.name, catch.Report)
			}
			program := strings.Join(catch.Program, "\n")
			t.Logf("found after %d checks (%v), shrunk by %v to %d steps:\n%s",
				catch.Checks, catch.ToFind.Round(1e6), catch.Total.Round(1e6), catch.Steps(), program)
			if catch.Failure.Rule != c.rule {
				t.Errorf("violation %q, want %q", catch.Failure.Rule, c.rule)
			}
			if got := catch.Steps(); got != len(c.program) {
				t.Errorf("shrunk to %d steps, want the minimal %d", got, len(c.program))
			}
			if got := stepTexts(catch.Program); strings.Join(got, "\n") != strings.Join(c.program, "\n") {
				t.Errorf("shrunk program:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(c.program, "\n  "))
			}
			if !strings.Contains(program, "^ violation: ") || !strings.Contains(program, c.rule) {
				t.Errorf("the printed program does not name the broken invariant %q", c.rule)
			}
			keepRegression(t, "baseline-"+c.name, "baseline", []string{"leased"}, catch)
		})
	}
}

// stepTexts are a program's numbered steps without number and comment.
func stepTexts(program []string) []string {
	var out []string
	for _, l := range program {
		if len(l) > 4 && l[3] == '.' {
			text := strings.TrimSpace(l[4:])
			if i := strings.Index(text, "   //"); i >= 0 {
				text = text[:i]
			}
			out = append(out, text)
		}
	}
	return out
}
