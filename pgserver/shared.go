package pgserver

import (
	"context"
	"sync"
	"time"
)

// shared holds the servers of this process, one per topology, each
// started on first use.
var shared struct {
	mu      sync.Mutex
	servers map[Topology]*sharedServer
}

type sharedServer struct {
	once sync.Once
	srv  *Server
	err  error
}

// Shared returns the one server of this process (a test binary or a command
// run), starting it on first use: SharedTopology(Single). CloseShared stops
// it.
func Shared() (*Server, error) { return SharedTopology(Single) }

// SharedTopology returns this process's one deployment of t, starting it on
// first use (StartTopology); a failed start is not retried. Every caller
// gets the same Server, so its protocols share it in schemas of their own,
// as they share Shared's. CloseShared stops every one of them.
func SharedTopology(t Topology) (*Server, error) {
	if _, err := ParseTopology(string(t)); err != nil {
		return nil, err
	}
	shared.mu.Lock()
	if shared.servers == nil {
		shared.servers = map[Topology]*sharedServer{}
	}
	s := shared.servers[t]
	if s == nil {
		s = &sharedServer{}
		shared.servers[t] = s
	}
	shared.mu.Unlock()
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s.srv, s.err = StartTopology(ctx, t)
	})
	return s.srv, s.err
}

// CloseShared stops every shared server that was started (waiting for one
// still starting); a later Shared or SharedTopology starts a new one.
func CloseShared() {
	shared.mu.Lock()
	servers := shared.servers
	shared.servers = nil
	shared.mu.Unlock()
	for _, s := range servers {
		s.once.Do(func() {}) // returns once a start under way has ended
		if s.srv != nil {
			s.srv.Close()
		}
	}
}
