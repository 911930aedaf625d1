package outboxlab

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
)

// TestMain lets this test binary double as a worker process, and stops the
// binary's one PostgreSQL server when the tests end.
func TestMain(m *testing.M) {
	worker.MainIfWorker()
	os.Exit(func() int {
		defer pgserver.CloseShared()
		return m.Run()
	}())
}

// install puts a protocol (built-in name or file) in a fresh schema of the
// shared server; the schema is dropped when the test ends.
func install(t testing.TB, protocol string) *sut.Instance {
	t.Helper()
	srv, err := pgserver.Shared()
	if err != nil {
		t.Fatal(err)
	}
	p, err := sut.Resolve(protocol)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inst, err := sut.Install(ctx, srv.ConnString(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inst.Close)
	return inst
}
