package outboxlab

import (
	"testing"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/search"
)

// TestProfiles pins the profile (a verdict per property) of protocols
// whose breaks are known: each broken property is found with its own
// counterexample while the ones broken before it are relaxed, and a
// property that holds is not reported broken. complete_no_lease_check is
// the case the profile exists for: it fences correctly and only lets an
// expired owner finish, so it must read as strict_expiry alone.
func TestProfiles(t *testing.T) {
	honestSearch(t)
	// From rapid seed 1, as TestMutantsCaught: a find has a long tail
	// over seeds, and a profile must find each of its breaks.
	setRapidFlag(t, "rapid.seed", "1")
	tests := []struct {
		protocol string
		broken   model.Property
		// or is another profile the protocol may read as: a fifo claim
		// that takes a later row while an earlier expired lease is
		// claimable breaks "claim took e2 out of order: e1, an expired
		// lease, is claimable first", which is the order's fault or a
		// claim that skips expired leases; the rule cannot tell, and
		// the profile files it under no_stranded_row.
		or model.Property
	}{
		{"leased", 0, 0},
		{"baseline", model.NoStrandedRow | model.Fencing | model.StrictExpiry | model.Terminal, 0},
		{"testdata/mutants/complete_no_lease_check.sql", model.StrictExpiry, 0},
		{"testdata/mutants/complete_no_generation.sql", model.Fencing, 0},
		{"testdata/mutants/claim_ignores_backoff.sql", model.Backoff, 0},
		{"testdata/mutants/claim_order_desc.sql", model.FIFOOrder, model.NoStrandedRow},
		{"testdata/mutants/claim_for_update.sql", model.NoWait, 0},
		{"testdata/mutants/retry_last_attempt_ready.sql", model.AttemptBudget, 0},
		{"testdata/mutants/rescue_takes_live.sql", model.OneLiveOwner, 0},
	}
	for _, tc := range tests {
		t.Run(tc.protocol, func(t *testing.T) {
			if !ciProfiles[tc.protocol] {
				nightlyOnly(t, "the profile of "+tc.protocol)
			}
			t.Parallel()
			h := harness(t, tc.protocol, catalogueConfig())
			p := search.On(h).Profile(t.Name(), profileShrink) // verdicts, not counterexamples
			if p.Stopped != nil {
				t.Fatalf("the profile stopped at %v:\n%v", p.Stopped.Failure, p.Stopped.Program)
			}
			if got := p.Broken(); got != tc.broken && (tc.or == 0 || got != tc.or) {
				t.Errorf("broken: %v, want %v", got, tc.broken)
			}
			for _, f := range p.Findings {
				if f.Verdict == search.Breaks && (f.Catch.Failure == nil || model.PropertyOf(f.Catch.Failure.Rule, f.Catch.Failure.Detail) != f.Property) {
					t.Errorf("%v breaks with a counterexample of another property: %v", f.Property, f.Catch.Failure)
				}
			}
		})
	}
}
