package verdict

import (
	"testing"
	"time"
)

// The rate is the steps run over the wall time, whatever the checks that
// ended: at 0 checks, 120 steps in 3 s are 40 steps/s (it printed
// 44000000000 steps/s, the steps over a harness time of zero).
func TestProgressLineRate(t *testing.T) {
	for _, c := range []struct {
		checks, steps, ran int
		since              time.Duration
		shrinking          bool
		want               string
	}{
		{0, 120, 120, 3 * time.Second, false, "leased: 0/100 checks, 120 steps, 40 steps/s"},
		{7, 900, 300, 6 * time.Second, false, "leased: 7/100 checks, 900 steps, 50 steps/s"},
		{101, 900, 90, 3 * time.Second, true, "leased: shrinking a counterexample, 101 runs, 30 steps/s"},
		{0, 0, 0, 0, false, "leased: 0/100 checks, 0 steps, no steps/s yet"},
	} {
		if got := progressLine("leased", c.checks, 100, c.steps, c.ran, c.since, c.shrinking); got != c.want {
			t.Errorf("progressLine(%d checks, %d steps, %d ran, %v) = %q, want %q", c.checks, c.steps, c.ran, c.since, got, c.want)
		}
	}
}
