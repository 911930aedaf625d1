package cutproxy

import "sync"

// Set is one proxy a name toward one upstream, each started on first use,
// so that one client's connections can be cut without touching another's.
type Set struct {
	upstream string
	mu       sync.Mutex
	byName   map[string]*Proxy
}

// NewSet prepares proxies toward upstream (host:port); none runs yet.
func NewSet(upstream string) *Set {
	return &Set{upstream: upstream, byName: map[string]*Proxy{}}
}

// Get returns name's proxy, starting it on first use.
func (s *Set) Get(name string) (*Proxy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.byName[name]; p != nil {
		return p, nil
	}
	p, err := Start(name, s.upstream)
	if err != nil {
		return nil, err
	}
	s.byName[name] = p
	return p, nil
}

// Close stops every proxy and the connections through them. The set can
// be used again afterwards: a name then gets a new proxy on a new port.
func (s *Set) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.byName {
		p.Close()
	}
	s.byName = map[string]*Proxy{}
}
