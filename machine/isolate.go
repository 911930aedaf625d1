package machine

import (
	"strings"
	"time"

	"github.com/outboxlab/outboxlab/model"
	"pgregory.net/rapid"
)

// Isolate narrows a check to one failure class of a protocol that has
// several, as the baseline has. rapid shrinks a counterexample only towards
// failures raised at the same place, so the class that happens to be found
// first is the one reported; a test that wants a given class must keep the
// others from being reached at all. Config.Actions does most of that; these
// two switch off the places where the stranded row shows.
type Isolate struct {
	// NoDrain ends a check after its random program, without the drain
	// (which reports every row a claim cannot take again).
	NoDrain bool
	// NoReclaim skips claims while a committed claim's lease has expired,
	// so that a claim that cannot take an expired row is never asked to.
	NoReclaim bool
}

// IsolatedCheck is Check narrowed by iso.
func (h *Harness) IsolatedCheck(iso Isolate) func(*rapid.T) {
	return func(t *rapid.T) {
		start := time.Now()
		r := h.begin(t)
		defer func() {
			h.mu.Lock()
			h.checks++
			h.elapsed += time.Since(start)
			h.mu.Unlock()
		}()
		actions := r.actions()
		if iso.NoReclaim {
			for name, act := range actions {
				// (a weighted action has several names: "claim#2")
				if base, _, _ := strings.Cut(name, "#"); base != ActClaim && base != ActBegin {
					continue
				}
				actions[name] = func(t *rapid.T) {
					if r.expiredLease() {
						t.Skip("isolated: no reclaim")
					}
					act(t)
				}
			}
		}
		t.Repeat(actions)
		if !iso.NoDrain {
			r.drain()
		}
	}
}

// expiredLease reports whether some committed claim's lease has expired.
func (r *run) expiredLease() bool {
	for _, row := range r.model().Rows {
		if row.Status == model.InProgress && !row.LeaseLive {
			return true
		}
	}
	return false
}
