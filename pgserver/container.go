package pgserver

import (
	"context"
	"errors"
	"sync"
)

// Container is a server in a container, the last of the ways Start tries.
// The Docker one is in package pgserver/docker, which registers itself
// when imported: the outboxlab command does, and a test binary that wants
// the fallback imports it for its side effect, so that a binary that does
// not links no container runtime's client.
type Container interface {
	// ConnString reaches the container's database.
	ConnString() string
	// Close removes the container.
	Close()
}

var containers struct {
	mu    sync.Mutex
	start func(context.Context) (Container, error)
}

// RegisterContainer makes start the way Start gets a container when no
// server was configured and no local binaries exist.
func RegisterContainer(start func(context.Context) (Container, error)) {
	containers.mu.Lock()
	defer containers.mu.Unlock()
	containers.start = start
}

// errNoContainer says how to bring the Docker fallback into a binary that
// left it out.
var errNoContainer = errors.New(`not linked into this binary (import _ "github.com/outboxlab/outboxlab/pgserver/docker" for it; the outboxlab command has it)`)

func startContainer(ctx context.Context) (Container, error) {
	containers.mu.Lock()
	start := containers.start
	containers.mu.Unlock()
	if start == nil {
		return nil, errNoContainer
	}
	return start(ctx)
}
