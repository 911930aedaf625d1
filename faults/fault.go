// Package faults holds what goes wrong: each fault is a small value with a
// name that injects itself and returns the undo that ends it. The Injector
// wires the network faults (one proxy per worker, so one worker's
// connection can be cut without touching the others; in this process
// (internal/cutproxy), or on an external toxiproxy server through its
// API) and server
// restarts into the state machine; the harness's own checking connection
// bypasses the proxies.
package faults

import (
	"context"
	"sync"
)

// Fault is one thing that goes wrong. Inject starts it; the undo it returns
// ends it and is safe to call more than once (defer it).
type Fault interface {
	Name() string
	Inject(ctx context.Context) (undo func(), err error)
}

// once makes an undo idempotent, so that it can be both deferred and
// called early.
func once(f func()) func() {
	var o sync.Once
	return func() { o.Do(f) }
}

func nothing() {}
