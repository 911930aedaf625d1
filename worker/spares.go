package worker

import (
	"sync"
)

// spares holds, per worker name, one process already started and connected
// (through that worker's proxy when faults are on), so that a respawn in the
// middle of a program costs a pipe message rather than an exec and a
// connection (about 7 ms, paid thousands of times while shrinking).
type spares struct {
	mu    sync.Mutex
	ready map[string]*Process
	busy  map[string]bool
	gen   int // bumped by discard: a refill started before it is dropped
}

func (s *spares) take(name string) *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.ready[name]
	delete(s.ready, name)
	return p
}

// refill starts a spare for spec.Name in the background unless one is ready
// or on its way.
func (s *spares) refill(spec Spec) {
	s.mu.Lock()
	if s.ready == nil {
		s.ready, s.busy = map[string]*Process{}, map[string]bool{}
	}
	if s.ready[spec.Name] != nil || s.busy[spec.Name] {
		s.mu.Unlock()
		return
	}
	s.busy[spec.Name] = true
	gen := s.gen
	s.mu.Unlock()
	go func() {
		p, err := Spawn(spec)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.busy[spec.Name] = false
		if err != nil {
			return
		}
		if gen != s.gen || s.ready[spec.Name] != nil {
			p.KillAsync()
			return
		}
		s.ready[spec.Name] = p
	}()
}

// discard kills every spare: on Close, and after a server restart, which
// breaks their connections.
func (s *spares) discard() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	for name, p := range s.ready {
		p.KillAsync()
		delete(s.ready, name)
	}
}
