package pgserver

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// startTestPooler starts a pooler topology with a pool of size, and checks
// at the end that Close leaves no directory and no PgBouncer behind.
func startTestPooler(t *testing.T, topo Topology, size int) *Server {
	t.Helper()
	bin, err := findBinaries()
	if err != nil {
		t.Fatalf("topology %s needs local server binaries: %v", topo, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := startPooledSized(ctx, topo, topo.poolMode(), bin, size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dirs, pid := srv.dirs(), srv.pool.proc.Process.Pid
		srv.Close()
		for _, d := range dirs {
			if _, err := os.Stat(d); !os.IsNotExist(err) {
				t.Errorf("%s still exists after Close", d)
			}
		}
		if st, err := processState(pid); err == nil && st != 'Z' {
			t.Errorf("pgbouncer %d still running after Close (state %c)", pid, st)
		}
	})
	return srv
}

// clients opens n separate client sessions on the workers' side of srv.
func clients(t *testing.T, srv *Server, n int) []*pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := srv.WorkerConnString(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var conns []*pgx.Conn
	for range n {
		conn, err := pgx.Connect(ctx, cs)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		conns = append(conns, conn)
	}
	return conns
}

// backendsAndLocks has each client read its server backend and take
// session advisory lock 1, and returns the distinct backends and how many
// clients got the lock.
func backendsAndLocks(t *testing.T, conns []*pgx.Conn) (backends map[int32]bool, locked int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	backends = map[int32]bool{}
	for i, conn := range conns {
		var pid int32
		var got bool
		if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			t.Fatalf("client %d: %v", i+1, err)
		}
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock(1)").Scan(&got); err != nil {
			t.Fatalf("client %d: %v", i+1, err)
		}
		backends[pid] = true
		if got {
			locked++
		}
	}
	return backends, locked
}

// TestTransactionPoolerSharesBackends is the contract's hand check: three
// client sessions through PgBouncer in transaction mode with a pool of 2
// share server backends, and each gets session advisory lock 1, which
// stays behind on a server connection rather than with its client.
func TestTransactionPoolerSharesBackends(t *testing.T) {
	t.Parallel()
	srv := startTestPooler(t, PoolerTransaction, 2)
	if srv.Fault() != FaultRestart || !srv.Owned() || !srv.Pooled() || srv.SharedServerConns() != 2 {
		t.Fatalf("pooler-transaction: fault %q, owned %v, pooled %v, shared connections %d; want restart, true, true, 2",
			srv.Fault(), srv.Owned(), srv.Pooled(), srv.SharedServerConns())
	}
	backends, locked := backendsAndLocks(t, clients(t, srv, 3))
	if len(backends) > 2 {
		t.Errorf("3 clients ran on %d server backends with a pool of 2", len(backends))
	}
	if locked != 3 {
		t.Errorf("%d of 3 clients got pg_try_advisory_lock(1), want all 3 (the lock stays with a server connection)", locked)
	}
}

// TestSessionPoolerKeepsBackends: in session mode a client keeps its
// server backend, so the second client is refused the first one's lock.
func TestSessionPoolerKeepsBackends(t *testing.T) {
	t.Parallel()
	srv := startTestPooler(t, PoolerSession, 2)
	if srv.SharedServerConns() != 0 {
		t.Errorf("pooler-session shares %d server connections, want 0 (a client keeps its own)", srv.SharedServerConns())
	}
	conns := clients(t, srv, 2)
	first, locked := backendsAndLocks(t, conns)
	again, _ := backendsAndLocks(t, conns)
	if len(first) != 2 || len(again) != 2 {
		t.Errorf("2 session clients ran on %d and then %d backends, want 2 each", len(first), len(again))
	}
	for pid := range first {
		if !again[pid] {
			t.Errorf("backend %d of the first round is gone in the second: a client did not keep its backend", pid)
		}
	}
	if locked != 1 {
		t.Errorf("%d of 2 session clients got pg_try_advisory_lock(1), want 1", locked)
	}

	// A PgBouncer that dies leaves the deployment broken, and says so.
	if err := srv.Broken(); err != nil {
		t.Fatalf("a serving pooler is broken: %v", err)
	}
	srv.pool.proc.Process.Kill()
	<-srv.pool.exited
	if err := srv.Broken(); err == nil || !strings.Contains(err.Error(), "PgBouncer exited during the run") {
		t.Errorf("Broken after PgBouncer's death = %v", err)
	}
}

// TestPoolerAliasSetsSearchPath: the workers' database alias gives every
// server connection the schema's search_path, through a restart of the
// server (PgBouncer outlives it and reconnects), and in session mode
// after a client has gone (the reset keeps it).
func TestPoolerAliasSetsSearchPath(t *testing.T) {
	t.Parallel()
	for _, topo := range []Topology{PoolerTransaction, PoolerSession} {
		t.Run(string(topo), func(t *testing.T) {
			t.Parallel()
			srv := startTestPooler(t, topo, 1)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			mustExec(t, connectFront(t, srv), "CREATE SCHEMA outboxlab_alias_probe")
			cs, err := srv.WorkerConnString(ctx, "outboxlab_alias_probe")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := srv.WorkerConnString(ctx, "Bad Name"); err == nil {
				t.Error("WorkerConnString took a schema name that needs quoting")
			}
			read := func(when string) {
				t.Helper()
				conn, err := pgx.Connect(ctx, cs)
				if err != nil {
					t.Fatalf("%s: %v", when, err)
				}
				defer conn.Close(context.Background())
				var path string
				if err := conn.QueryRow(ctx, "SELECT current_setting('search_path')").Scan(&path); err != nil {
					t.Fatalf("%s: %v", when, err)
				}
				if path != "outboxlab_alias_probe" {
					t.Errorf("%s: search_path %q, want outboxlab_alias_probe", when, path)
				}
			}
			read("first client")
			read("second client")
			if err := srv.Crash(ctx); err != nil {
				t.Fatal(err)
			}
			read("after a restart")
		})
	}
}
