package driver

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// The registry is per process, which is what makes it reach the workers:
// each is the same binary re-executed, and runs the same init functions and
// TestMain before it serves.
var (
	mu        sync.RWMutex
	protocols = map[string]Protocol{}
)

// Register makes p available under name. It panics on an empty name, a nil
// protocol or a name registered twice, as database/sql.Register does: each
// is a programming error found at start-up.
func Register(name string, p Protocol) {
	if name == "" || strings.ContainsAny(name, " \t\n") {
		panic(fmt.Sprintf("driver.Register: bad name %q", name))
	}
	if p == nil {
		panic("driver.Register: nil protocol for " + name)
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := protocols[name]; dup {
		panic("driver.Register: " + name + " registered twice")
	}
	protocols[name] = p
}

// Lookup returns the protocol registered under name.
func Lookup(name string) (Protocol, error) {
	mu.RLock()
	defer mu.RUnlock()
	if p, ok := protocols[name]; ok {
		return p, nil
	}
	known := make([]string, 0, len(protocols))
	for n := range protocols {
		known = append(known, n)
	}
	slices.Sort(known)
	return nil, fmt.Errorf("no Go driver registered as %q (registered: %s); register it in an init function or in TestMain before outboxlabtest.Main, so the worker processes have it too",
		name, orNone(known))
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
