package verdict

import (
	"fmt"
	"io"
	"time"

	"github.com/outboxlab/outboxlab/machine"
)

// showProgress prints checks done and steps per second every few seconds
// on w, for long runs; the returned func stops it. A nil w prints nothing.
//
// The rate is steps over the wall time since the progress began: the
// harness's elapsed time grows only when a check ends, while its steps
// grow during one, so their ratio read "44000000000 steps/s" before the
// first long check had ended.
func showProgress(h *machine.Harness, name string, total int, w io.Writer) func() {
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	_, steps0, _ := h.Stats()
	start := time.Now()
	go func() {
		tick := time.NewTicker(3 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				checks, steps, _ := h.Stats()
				shrinking := h.Failure() != nil || checks > total
				fmt.Fprintln(w, progressLine(name, checks, total, steps, steps-steps0, time.Since(start), shrinking))
			}
		}
	}()
	return func() { close(done) }
}

// progressLine is one line of showProgress: ran steps in the wall time
// since, of which steps in all.
func progressLine(name string, checks, total, steps, ran int, since time.Duration, shrinking bool) string {
	rate := "no steps/s yet"
	if since > 0 {
		rate = fmt.Sprintf("%.0f steps/s", float64(ran)/since.Seconds())
	}
	if shrinking {
		return fmt.Sprintf("%s: shrinking a counterexample, %d runs, %s", name, checks, rate)
	}
	return fmt.Sprintf("%s: %d/%d checks, %d steps, %s", name, checks, total, steps, rate)
}
