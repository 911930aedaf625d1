// Package pgserver provides the PostgreSQL server a run works against: one the
// user points at (DATABASE_URL or the libpq PG* variables), a throwaway
// cluster started from local server binaries, or a Docker container
// (when package pgserver/docker is linked in), in that order. A cluster the harness owns can be crashed and restarted for fault
// tests; nothing it starts outlives the process that started it.
package pgserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a PostgreSQL server the run may use.
type Server struct {
	// Source says where the server came from: "env", "local" or "docker".
	Source string
	// Version is the server_version the server reports.
	Version string
	// Topology is the deployment the server is (StartTopology); Start
	// gives Single.
	Topology Topology

	connString string
	cluster    *cluster    // set when Source == "local"
	container  Container   // set when Source == "docker"
	deploy     *deployment // set for the rewinding and standby topologies
	pool       *pooler     // set for the pooler topologies, with cluster
	mu         sync.Mutex
}

// ErrNoServer is returned when none of the three ways of providing a server
// is available.
var ErrNoServer = errors.New("no PostgreSQL server: set DATABASE_URL (or the libpq PG* variables) to use an existing server, " +
	"install PostgreSQL server binaries (OUTBOXLAB_PG_BIN, pg_config --bindir, PATH or /usr/lib/postgresql/*/bin) to start a throwaway cluster, " +
	"or run a Docker daemon to start a postgres container (in a binary that imports github.com/outboxlab/outboxlab/pgserver/docker)")

// Start finds or starts a server. The caller must Close it.
func Start(ctx context.Context) (*Server, error) {
	if cs, ok := userConnString(); ok {
		return adopt(ctx, "env", cs, nil, nil)
	}
	bin, binErr := findBinaries()
	if binErr == nil {
		c, err := startCluster(ctx, bin)
		if err != nil {
			return nil, fmt.Errorf("start local cluster from %s: %w", bin, err)
		}
		return adopt(ctx, "local", c.connString(), c, nil)
	}
	d, dockerErr := startContainer(ctx)
	if dockerErr == nil {
		return adopt(ctx, "docker", d.ConnString(), nil, d)
	}
	return nil, fmt.Errorf("%w (local binaries: %v; docker: %v)", ErrNoServer, binErr, dockerErr)
}

func adopt(ctx context.Context, source, cs string, c *cluster, d Container) (*Server, error) {
	s := &Server{Source: source, Topology: Single, connString: cs, cluster: c, container: d}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, cs)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("connect to %s server: %w", source, err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&s.Version); err != nil {
		s.Close()
		return nil, fmt.Errorf("read server version: %w", err)
	}
	return s, nil
}

// userConnString reports the server the user configured, if any.
func userConnString() (string, bool) {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u, true
	}
	for _, k := range []string{"PGHOST", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE"} {
		if os.Getenv(k) != "" {
			return "", true // pgx reads the PG* variables itself
		}
	}
	return "", false
}

// ConnString is the connection string for the server's database.
func (s *Server) ConnString() string { return s.connString }

// Owned reports whether the harness owns the server and may crash and
// restart it (Crash) losing no committed transaction: Fault() is
// FaultRestart, what the db_restart fault needs. A deployment of another
// topology is the harness's too, but Crash means something else there (a
// rewind under AsyncCommit, a refusal on a standby topology): it is not
// Owned, so that a caller that knows only the restart leaves it alone, and
// its fault is had through Fault.
func (s *Server) Owned() bool { return s.cluster != nil }

// Crash stops the server immediately (open transactions are lost, committed
// ones survive) and starts it again on the same port and data directory.
// Under AsyncCommit it is a rewind instead (see deployment.crash); the
// standby topologies refuse it, their fault is Failover (see Fault).
func (s *Server) Crash(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deploy != nil {
		return s.deploy.crash(ctx)
	}
	if s.cluster == nil {
		return errors.New("crash: the server was not started by this run")
	}
	if err := s.cluster.restart(ctx); err != nil {
		return err
	}
	if s.pool != nil {
		return s.pool.restarted(ctx, s.cluster.port)
	}
	return nil
}

// Close stops whatever the run started; a user's server is left alone.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pool != nil {
		s.pool.stop() // first: nothing reconnects to the stopping server
	}
	if s.cluster != nil {
		s.cluster.stop()
	}
	if s.container != nil {
		s.container.Close()
	}
	if s.deploy != nil {
		s.deploy.close()
	}
}

func (s *Server) String() string {
	if s.deploy != nil || s.pool != nil {
		return fmt.Sprintf("PostgreSQL %s (%s, %s)", strings.Fields(s.Version + " ?")[0], s.Source, s.Topology)
	}
	return fmt.Sprintf("PostgreSQL %s (%s)", strings.Fields(s.Version + " ?")[0], s.Source)
}
