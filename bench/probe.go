package bench

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Probe is one operation to time: set up once, then run many times. The
// go test benchmarks and `outboxlab bench` time the same probes.
type Probe struct {
	// Before readies the next Run and is not timed (nil: nothing to do).
	Before func(ctx context.Context) error
	// Run is the operation timed.
	Run func(ctx context.Context) error
	// Close releases what the probe set up.
	Close func()
}

// Median runs the probe once to warm it (connections, statement cache,
// plans), then n times, and returns the median wall time of Run.
func (p *Probe) Median(ctx context.Context, n int) (time.Duration, error) {
	times := make([]time.Duration, 0, n)
	for i := 0; i <= n; i++ {
		if p.Before != nil {
			if err := p.Before(ctx); err != nil {
				return 0, fmt.Errorf("prepare run %d: %w", i, err)
			}
		}
		start := time.Now()
		if err := p.Run(ctx); err != nil {
			return 0, fmt.Errorf("run %d: %w", i, err)
		}
		if i > 0 {
			times = append(times, time.Since(start))
		}
	}
	return median(times), nil
}

// median of a non-empty sample; 0 for an empty one.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianFloat(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
