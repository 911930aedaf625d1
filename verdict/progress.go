package verdict

import (
	"fmt"
	"io"
	"time"

	"github.com/outboxlab/outboxlab/machine"
)

// showProgress prints checks done and steps per second every few seconds
// on w, for long runs; the returned func stops it. A nil w prints nothing.
func showProgress(h *machine.Harness, name string, total int, w io.Writer) func() {
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(3 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				checks, steps, elapsed := h.Stats()
				rate := float64(steps) / max(elapsed.Seconds(), 1e-9)
				if h.Failure() != nil || checks > total {
					fmt.Fprintf(w, "%s: shrinking a counterexample, %d runs, %.0f steps/s\n", name, checks, rate)
					continue
				}
				fmt.Fprintf(w, "%s: %d/%d checks, %d steps, %.0f steps/s\n", name, checks, total, steps, rate)
			}
		}
	}()
	return func() { close(done) }
}
