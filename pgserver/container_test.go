package pgserver

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// clusterContainer is a real local cluster standing where a container
// would: the registry's wiring is what is under test, not Docker.
type clusterContainer struct {
	c      *cluster
	closed bool
}

func (cc *clusterContainer) ConnString() string { return cc.c.connString() }
func (cc *clusterContainer) Close()             { cc.closed = true; cc.c.stop() }

// noLocalServer leaves Start only the container: no DATABASE_URL or PG*
// variable, and OUTBOXLAB_PG_BIN naming a directory without binaries. It
// returns the binaries there were, for the stand-in container.
func noLocalServer(t *testing.T) string {
	t.Helper()
	bin, err := findBinaries()
	if err != nil {
		t.Fatalf("local server binaries: %v", err)
	}
	for _, k := range []string{"DATABASE_URL", "PGHOST", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)  // unset, not empty: initdb reads PGPORT too
	}
	t.Setenv("OUTBOXLAB_PG_BIN", t.TempDir())
	return bin
}

func registered(t *testing.T, start func(context.Context) (Container, error)) {
	t.Helper()
	containers.mu.Lock()
	before := containers.start
	containers.mu.Unlock()
	RegisterContainer(start)
	t.Cleanup(func() { RegisterContainer(before) })
}

// TestNoContainerLinked: without pgserver/docker in the binary, Start's
// error says how to link it in.
func TestNoContainerLinked(t *testing.T) {
	noLocalServer(t)
	registered(t, nil)
	srv, err := Start(context.Background())
	if err == nil {
		srv.Close()
		t.Fatal("Start found a server with no way to get one")
	}
	if !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), `import _ "github.com/outboxlab/outboxlab/pgserver/docker"`) {
		t.Fatalf("error %v: want ErrNoServer naming the import", err)
	}
}

// TestRegisteredContainer: the registered container is Start's last
// resort, its server is adopted as "docker", and Close removes it.
func TestRegisteredContainer(t *testing.T) {
	bin := noLocalServer(t)
	var cc *clusterContainer
	registered(t, func(ctx context.Context) (Container, error) {
		c, err := startCluster(ctx, bin)
		if err != nil {
			return nil, err
		}
		cc = &clusterContainer{c: c}
		return cc, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Source != "docker" || srv.Version == "" || srv.Owned() {
		srv.Close()
		t.Fatalf("Source %q, Version %q, Owned %v: want an adopted container the harness does not crash", srv.Source, srv.Version, srv.Owned())
	}
	srv.Close()
	if !cc.closed {
		t.Fatal("Close left the container")
	}
}
