package machine

import (
	"sync"

	"github.com/outboxlab/outboxlab/worker"
)

// killIdle SIGKILLs a worker whose backend holds nothing another session
// could meet, and does not wait for the server to end it: about 3 ms a
// kill, paid hundreds of times while shrinking.
func (h *Harness) killIdle(name string) {
	p := h.procs[name]
	if p == nil {
		return
	}
	p.KillAsync()
	delete(h.procs, name)
	delete(h.stale, name)
}

// holdsNothing reports whether w's backend holds no lock and runs no
// statement: no open transaction in any model state the run may be in, and
// no fault that could leave a statement in flight. Between two steps a
// backend without a transaction holds no row lock, and a protocol that kept
// a session lock across steps would already break the model without kills.
func (r *run) holdsNothing(w string) bool {
	if r.h.Faults != nil || r.faultPending {
		return false
	}
	for _, s := range r.states {
		for _, p := range s.Pending {
			if p.Worker == w {
				return false
			}
		}
	}
	return true
}

// doAll sends each named worker its request, all at once, and waits for
// every answer: the pool's resets cost one round trip, not one a worker.
func (h *Harness) doAll(reqs map[string]worker.Request) map[string]error {
	errs := make(map[string]error, len(reqs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, req := range reqs {
		p := h.procs[name]
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := p.Do(req)
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	return errs
}
