package pgserver

import (
	"errors"
	"syscall"
)

// Resume undoes the stops of MarkDurable (AsyncCommit's WAL writer) and
// Stall (the WAL sender): the WAL is written and streamed again. A check
// that stalled replication and ended without a failover leaves the next
// check a deployment that replicates, and the next MarkDurable then waits
// for everything, the next check's reset included. On a server without a
// deployment it does nothing.
func (s *Server) Resume() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deploy == nil {
		return nil
	}
	d := s.deploy
	var errs []error
	for _, pid := range []*int{&d.stalled, &d.frozen} {
		if *pid == 0 {
			continue
		}
		// A process gone meanwhile (the server crashed) needs no waking.
		if err := syscall.Kill(*pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, err)
		}
		*pid = 0
	}
	return errors.Join(errs...)
}
