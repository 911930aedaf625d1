package pgserver

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestParseTopology(t *testing.T) {
	for _, name := range []string{"single", "async-commit", "async-standby", "sync-standby", "pooler-transaction", "pooler-session"} {
		if got, err := ParseTopology(name); err != nil || string(got) != name {
			t.Errorf("ParseTopology(%q) = %q, %v", name, got, err)
		}
	}
	_, err := ParseTopology("pooler")
	want := `unknown topology "pooler": want one of single, async-commit, async-standby, sync-standby, pooler-transaction, pooler-session`
	if err == nil || err.Error() != want {
		t.Errorf("ParseTopology(pooler) error = %v, want %s", err, want)
	}
}

// TestTopologyNeedsLocalBinaries: a server named by DATABASE_URL cannot be
// rebuilt into a topology, nor can one without local binaries (where only
// Docker would be left); the error says what is needed.
func TestTopologyNeedsLocalBinaries(t *testing.T) {
	for env, value := range map[string]string{
		"DATABASE_URL":     "postgres://postgres@127.0.0.1:1/postgres",
		"OUTBOXLAB_PG_BIN": t.TempDir(),
	} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, value)
			srv, err := StartTopology(context.Background(), AsyncStandby)
			if err == nil {
				srv.Close()
				t.Fatalf("StartTopology(async-standby) with %s=%s started something", env, value)
			}
			if !strings.Contains(err.Error(), "topology async-standby needs local PostgreSQL server binaries") {
				t.Fatalf("error does not say what is needed: %v", err)
			}
		})
	}
}

// TestAsyncCommitCrashLosesWhatMarkDurableDidNotCover commits three rows,
// marks them durable, commits three more (all acknowledged), crashes the
// server and finds exactly the first three; then the same once more, to
// show the restarted server's MarkDurable works too.
func TestAsyncCommitCrashLosesWhatMarkDurableDidNotCover(t *testing.T) {
	t.Parallel()
	srv := startTestTopology(t, AsyncCommit)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if srv.Fault() != FaultCrash || !srv.Topology.Rewinds() || srv.Owned() {
		t.Fatalf("async-commit: fault %q, rewinds %v, owned %v; want crash, true and false (its Crash is no restart)",
			srv.Fault(), srv.Topology.Rewinds(), srv.Owned())
	}
	conn := connectFront(t, srv)
	mustExec(t, conn, "CREATE TABLE rewind_probe (v int)")
	insertEach(t, conn, "rewind_probe", 1, 2, 3)
	var inserted string
	if err := conn.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&inserted); err != nil {
		t.Fatal(err)
	}
	if err := srv.MarkDurable(ctx); err != nil {
		t.Fatal(err)
	}
	var flushed bool
	if err := conn.QueryRow(ctx, "SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn", inserted).Scan(&flushed); err != nil {
		t.Fatal(err)
	}
	if !flushed {
		t.Fatal("MarkDurable did not flush the WAL of the commits before it")
	}
	insertEach(t, conn, "rewind_probe", 4, 5, 6)
	var unwritten bool
	if err := conn.QueryRow(ctx, "SELECT pg_current_wal_lsn() < pg_current_wal_insert_lsn()").Scan(&unwritten); err != nil {
		t.Fatal(err)
	}
	if !unwritten {
		t.Fatal("after the commits that follow MarkDurable, the server has written all its WAL: nothing for a crash to lose")
	}
	if err := srv.Crash(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("a connection from before the crash still works")
	}
	conn = connectFront(t, srv)
	wantRows(t, conn, "rewind_probe", 1, 2, 3)

	insertEach(t, conn, "rewind_probe", 7)
	if err := srv.MarkDurable(ctx); err != nil {
		t.Fatal(err)
	}
	insertEach(t, conn, "rewind_probe", 8)
	if err := srv.Crash(ctx); err != nil {
		t.Fatal(err)
	}
	wantRows(t, connectFront(t, srv), "rewind_probe", 1, 2, 3, 7)
}

// startTestTopology starts a topology from the local binaries (even when
// DATABASE_URL names another server, as holdCluster does) and checks at
// the end that Close leaves none of its directories behind.
func startTestTopology(t testing.TB, topo Topology) *Server {
	t.Helper()
	bin, err := findBinaries()
	if err != nil {
		t.Fatalf("topology %s needs local server binaries: %v", topo, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := startTopology(ctx, topo, bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dirs := srv.dirs()
		srv.Close()
		for _, d := range dirs {
			if _, err := os.Stat(d); !os.IsNotExist(err) {
				t.Errorf("%s still exists after Close", d)
			}
		}
	})
	return srv
}

// dirs lists the directories of the server's clusters (and pooler).
func (s *Server) dirs() []string {
	if s.deploy != nil {
		return s.deploy.dirs()
	}
	dirs := []string{s.cluster.dir, filepath.Join(s.cluster.dir, "data")}
	if s.pool != nil {
		dirs = append(dirs, s.pool.dir)
	}
	return dirs
}

// dirs lists the cluster directories of the deployment's servers.
func (d *deployment) dirs() []string {
	var dirs []string
	for _, c := range []*cluster{d.primary, d.standby} {
		if c != nil {
			dirs = append(dirs, c.dir, filepath.Join(c.dir, "data"))
		}
	}
	return dirs
}

func connectFront(t testing.TB, srv *Server) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// insertEach commits one row per value, each its own transaction.
func insertEach(t testing.TB, conn *pgx.Conn, table string, values ...int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, v := range values {
		if _, err := conn.Exec(ctx, "INSERT INTO "+table+" VALUES ($1)", v); err != nil {
			t.Fatalf("insert %d: %v", v, err)
		}
	}
}

func readRows(t testing.TB, conn *pgx.Conn, table string) []int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, _ := conn.Query(ctx, "SELECT v FROM "+table+" ORDER BY v")
	got, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatalf("read %s: %v", table, err)
	}
	return got
}

func wantRows(t testing.TB, conn *pgx.Conn, table string, want ...int) {
	t.Helper()
	if got := readRows(t, conn, table); !slices.Equal(got, want) {
		t.Fatalf("%s holds %v, want %v", table, got, want)
	}
}
