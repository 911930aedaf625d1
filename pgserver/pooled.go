package pgserver

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// workerQueryMode is the pgx query mode of every worker connection through
// a pooler. PgBouncer before 1.21 keeps no named prepared statement across
// transactions in transaction mode (pgx's default, cache_statement, would
// find its statements gone on the next server connection) and the
// contract wants one mode for both pooler topologies. cache_describe
// describes a statement once, on the unnamed statement, only to learn its
// parameter and result types, then runs it every time as one Parse, Bind,
// Execute and Sync of the unnamed statement: nothing outlives the round
// trip, so any server connection will do, and the types and binary
// formats stay the server's, as under cache_statement. (describe_exec
// would describe and execute in two round trips, between which a
// transaction pooler may switch server connections; exec and
// simple_protocol guess types from the Go values.)
const workerQueryMode = "cache_describe"

// startPooled starts a pooler topology: one cluster as Start's (its fault
// the restart), and PgBouncer in front of it for the workers.
func startPooled(ctx context.Context, t Topology, mode, bin string) (*Server, error) {
	return startPooledSized(ctx, t, mode, bin, poolSize(mode))
}

// startPooledSized is startPooled with a pool of size (a test's).
func startPooledSized(ctx context.Context, t Topology, mode, bin string, size int) (*Server, error) {
	if _, err := findPgBouncer(); err != nil {
		return nil, fmt.Errorf("topology %s: %w", t, err)
	}
	c, err := startClusterWith(ctx, bin, nil, (*cluster).startPoolerReaper)
	if err != nil {
		return nil, fmt.Errorf("start %s from %s: %w", t, bin, err)
	}
	s := &Server{Source: "local", Topology: t, connString: c.connString(), cluster: c}
	if s.pool, err = startPooler(ctx, c, mode, size); err != nil {
		s.Close()
		return nil, fmt.Errorf("start %s: %w", t, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, s.pool.connString(s.pool.database)+"&default_query_exec_mode="+workerQueryMode)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("connect to %s through PgBouncer: %w", t, err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(cctx, "SHOW server_version").Scan(&s.Version); err != nil {
		s.Close()
		return nil, fmt.Errorf("read server version through PgBouncer: %w", err)
	}
	return s, nil
}

// WorkerConnString is where the workers of a protocol installed in schema
// connect: the server (ConnString) on every topology but the pooler ones,
// where it is PgBouncer, on a database alias whose server connections
// have schema as their search_path, in workerQueryMode. The fixtures and
// the harness connect to ConnString, directly. An empty schema is the
// server's own database, through the pooler.
func (s *Server) WorkerConnString(ctx context.Context, schema string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pool == nil {
		return s.connString, nil
	}
	db := s.pool.database
	if schema != "" {
		var err error
		if db, err = s.pool.alias(ctx, schema); err != nil {
			return "", err
		}
	}
	return s.pool.connString(url.PathEscape(db)) + "&default_query_exec_mode=" + workerQueryMode, nil
}

// Pooled reports whether the workers reach the server through a pooler,
// where their connection's server backend is not theirs alone: the
// harness finds it by the worker's application_name (worker.Backend).
func (s *Server) Pooled() bool { return s != nil && s.pool != nil }

// ReleasesClientSessions reports whether the session state a worker's
// client leaves on its server connection (a session lease's advisory
// locks) goes when the client does: a direct connection's backend ends,
// and the session pooler runs its reset query on the connection. The
// transaction pooler runs none (PgBouncer's transaction mode has no
// server_reset_query here), so the state stays on the server connection
// until the harness closes it (FreshServerSessions): nothing to wait for.
func (s *Server) ReleasesClientSessions() bool {
	return s == nil || s.pool == nil || s.pool.mode != "transaction"
}

// SharedServerConns is how many server connections the workers'
// transactions share when that is fewer than one a worker (the
// transaction pooler's pool), else 0: a worker's statement outside a
// transaction waits for a free one while that many transactions are
// open.
func (s *Server) SharedServerConns() int {
	if s == nil || s.pool == nil || s.pool.mode != "transaction" {
		return 0
	}
	return s.pool.size
}

// Broken says why the deployment stopped serving while the harness still
// held it (PgBouncer exited), nil while it serves: a failure found after
// that is the deployment's, not the protocol's.
func (s *Server) Broken() error {
	if s == nil || s.pool == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.pool.exited:
		log, _ := os.ReadFile(filepath.Join(s.pool.dir, "pgbouncer.log"))
		return fmt.Errorf("PgBouncer exited during the run: %s", lastLines(log, 1))
	default:
		return nil
	}
}

// FreshServerSessions closes every server connection, and every client,
// of schema's database alias in the pooler, and returns the server pids
// that were closed (the caller waits for them to leave pg_stat_activity),
// so that the next clients start on server sessions of their own. Session
// state a transaction pooler keeps on its server connections (a session
// lease's advisory locks) would otherwise outlive the check that took it.
// Nothing to do without a pooler.
func (s *Server) FreshServerSessions(ctx context.Context, schema string) ([]uint32, error) {
	if s == nil || s.pool == nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	conn, err := s.pool.admin(ctx)
	if err != nil {
		return nil, fmt.Errorf("pooler: console: %w", err)
	}
	defer conn.Close(context.Background())
	pids, err := serverPids(ctx, conn, schema)
	if err != nil {
		return nil, err
	}
	// KILL pauses the database; RESUME lets new clients in.
	for _, cmd := range []string{"KILL " + schema, "RESUME " + schema} {
		if err := conn.PgConn().Exec(ctx, cmd).Close(); err != nil {
			return nil, fmt.Errorf("pooler: %s: %w", cmd, err)
		}
	}
	return pids, nil
}

// serverPids are the server backends of the pooler's database db, from its
// console's SHOW SERVERS (its remote_pid column).
func serverPids(ctx context.Context, conn *pgx.Conn, db string) ([]uint32, error) {
	results, err := conn.PgConn().Exec(ctx, "SHOW SERVERS").ReadAll()
	if err != nil {
		return nil, fmt.Errorf("pooler: SHOW SERVERS: %w", err)
	}
	var pids []uint32
	for _, res := range results {
		dbCol, pidCol := -1, -1
		for i, f := range res.FieldDescriptions {
			switch f.Name {
			case "database":
				dbCol = i
			case "remote_pid":
				pidCol = i
			}
		}
		if dbCol < 0 || pidCol < 0 {
			return nil, fmt.Errorf("pooler: SHOW SERVERS has no database or remote_pid column")
		}
		for _, row := range res.Rows {
			if string(row[dbCol]) != db {
				continue
			}
			if pid, err := strconv.ParseUint(string(row[pidCol]), 10, 32); err == nil && pid > 0 {
				pids = append(pids, uint32(pid))
			}
		}
	}
	return pids, nil
}
