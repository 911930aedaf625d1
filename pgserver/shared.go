package pgserver

import (
	"context"
	"sync"
	"time"
)

var shared struct {
	once sync.Once
	srv  *Server
	err  error
}

// Shared returns the one server of this process (a test binary or a command
// run), starting it on first use. CloseShared stops it.
func Shared() (*Server, error) {
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.srv, shared.err = Start(ctx)
	})
	return shared.srv, shared.err
}

// CloseShared stops the shared server if one was started.
func CloseShared() {
	if shared.srv != nil {
		shared.srv.Close()
	}
}
