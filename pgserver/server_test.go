package pgserver

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestCrashKeepsCommitsAndLosesOpenTransactions starts a real cluster,
// commits one row, leaves another insert open, crashes the server and checks
// that exactly the committed row survived, then that Close removes everything.
func TestCrashKeepsCommitsAndLosesOpenTransactions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if !srv.Owned() {
		t.Skipf("server from %s cannot be crashed by the harness", srv.Source)
	}
	conn, err := pgx.Connect(ctx, srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, conn, "CREATE TABLE crash_probe (v int)")
	mustExec(t, conn, "INSERT INTO crash_probe VALUES (1)")
	open, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open.Exec(ctx, "INSERT INTO crash_probe VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Crash(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("a connection from before the crash still works")
	}
	conn2, err := pgx.Connect(ctx, srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close(ctx)
	var got []int32
	rows, _ := conn2.Query(ctx, "SELECT v FROM crash_probe ORDER BY v")
	got, err = pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != 1 {
		t.Fatalf("after crash: rows %v, want [1]", got)
	}
	dir := srv.cluster.dir
	srv.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("cluster directory %s still exists after Close", dir)
	}
}

func mustExec(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
