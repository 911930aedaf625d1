package machine

import (
	"slices"
	"testing"

	"github.com/outboxlab/outboxlab/model"
)

// TestReclaimNotRequiredOfOneAttempt: with max_attempts=1 every expired
// lease is a last attempt, which a claim buries and never takes, so a pass
// does not need a reclaim; with any other budget, or none, it does.
func TestReclaimNotRequiredOfOneAttempt(t *testing.T) {
	has := func(string) bool { return true }
	for _, tc := range []struct {
		attempts int
		want     bool
	}{{0, true}, {1, false}, {2, true}} {
		got := slices.Contains(RequiredClasses(Default(), model.Policy{MaxAttempts: tc.attempts}, has, false), CovReclaim)
		if got != tc.want {
			t.Errorf("max_attempts=%d: reclaim required %v, want %v", tc.attempts, got, tc.want)
		}
	}
}
