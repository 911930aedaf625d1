package outboxlabtest

import (
	"os"
	"sync/atomic"
	"testing"

	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/worker"
)

// mainCalled is set by Main. Without it the binary cannot serve as a
// worker: a worker process would run the package's tests again instead.
var mainCalled atomic.Bool

// Main is the TestMain of a package that calls Check or Run: in a worker
// process it serves the parent and exits; otherwise it runs the tests,
// stops the PostgreSQL server the tests started (if they started one) and
// exits with the tests' status.
func Main(m *testing.M) {
	worker.MainIfWorker()
	mainCalled.Store(true)
	code := m.Run()
	pgserver.CloseShared()
	os.Exit(code)
}
