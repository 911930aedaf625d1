package worker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
)

// Workers through PgBouncer in transaction mode (pgserver's
// pooler-transaction): their query mode needs no named prepared statement,
// and the harness finds the backend of a worker's open transaction by its
// application_name. A real PgBouncer 1.18 from pgserver.SharedTopology.

func pooledSetup(t *testing.T) (*pgserver.Server, *sut.Instance, string) {
	t.Helper()
	srv, err := pgserver.SharedTopology(pgserver.PoolerTransaction)
	if err != nil {
		t.Fatalf("pooler-transaction: %v", err)
	}
	p, err := sut.Resolve("leased")
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
	if err := inst.Reset(ctx, []string{"e1", "e2", "e3", "e4", "e5", "e6"}); err != nil {
		t.Fatal(err)
	}
	cs, err := srv.WorkerConnString(ctx, inst.Statements.Schema)
	if err != nil {
		t.Fatal(err)
	}
	return srv, inst, cs
}

// TestPoolerBreaksCachedStatements is the control: two clients through
// the transaction pooler in pgx's default mode, cache_statement, each
// prepare the same named statement, on whichever server connection is
// free; one of them finds it prepared already or gone. Without this
// failure the next test would show nothing.
func TestPoolerBreaksCachedStatements(t *testing.T) {
	_, _, cs := pooledSetup(t)
	cs = strings.Replace(cs, "default_query_exec_mode=cache_describe", "default_query_exec_mode=cache_statement", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var conns []*pgx.Conn
	for range 2 {
		conn, err := pgx.Connect(ctx, cs)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		conns = append(conns, conn)
	}
	for i := range 6 {
		var n int
		if err := conns[i%2].QueryRow(ctx, "SELECT count(*) FROM outbox_lab WHERE id > $1", i).Scan(&n); err != nil {
			t.Logf("query %d: %v", i+1, err)
			return
		}
	}
	t.Fatal("cache_statement ran through the transaction pooler without an error: PgBouncer kept named statements")
}

// TestPooledWorkersDrainThroughTransactionPooler: four pooled workers
// (Spec.Pooled, cache_describe) claim and complete every row through a
// pool of three server connections while one of them holds an open claim
// transaction, with no error; that worker's transaction shows under its
// application_name, and it waits on no lock.
func TestPooledWorkersDrainThroughTransactionPooler(t *testing.T) {
	srv, inst, cs := pooledSetup(t)
	if srv.SharedServerConns() >= 4 {
		t.Fatalf("the pool has %d server connections, want fewer than the 4 workers", srv.SharedServerConns())
	}
	var procs []*Process
	for _, name := range []string{"w1", "w2", "w3", "w4"} {
		p, err := Spawn(Spec{Name: name, ConnString: cs, Statements: inst.Statements, OpTimeout: 5 * time.Second, Pooled: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Kill() })
		procs = append(procs, p)
	}
	open := do(t, procs[0], Request{Op: "begin"})
	if open.Err != "" || !open.Found {
		t.Fatalf("w1 begin = %+v", open)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := procs[0].ServerBackend()
	var inTx int
	if err := inst.Conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state = 'idle in transaction'", b.App).Scan(&inTx); err != nil {
		t.Fatal(err)
	}
	var apps []string
	for _, p := range procs {
		apps = append(apps, p.AppName())
	}
	if by, err := b.BlockedBy(ctx, inst.Conn, apps); inTx != 1 || by != "" || err != nil {
		t.Errorf("w1's open claim: %d backends idle in transaction as %q (want 1), waits on a lock of %q (%v)", inTx, b.App, by, err)
	}
	completed := 0
	for round := 0; round < 10 && completed < 5; round++ {
		for _, p := range procs[1:] {
			resp := do(t, p, Request{Op: "claim"})
			if resp.Err != "" {
				t.Fatalf("%s claim: %s", p.Name, resp.Err)
			}
			if !resp.Found {
				continue
			}
			if resp := do(t, p, Request{Op: "complete", ID: resp.ID, Gen: resp.Gen}); resp.Err != "" || !resp.Applied {
				t.Fatalf("%s complete: %+v", p.Name, resp)
			}
			completed++
		}
	}
	if resp := do(t, procs[0], Request{Op: "commit"}); resp.Err != "" {
		t.Fatalf("w1 commit: %s", resp.Err)
	}
	if resp := do(t, procs[0], Request{Op: "complete", ID: open.ID, Gen: open.Gen}); resp.Err != "" || !resp.Applied {
		t.Fatalf("w1 complete: %+v", resp)
	}
	if got := statuses(t, inst); completed != 5 || got != "e1:SENT e2:SENT e3:SENT e4:SENT e5:SENT e6:SENT" {
		t.Errorf("the others completed %d rows (want 5); rows: %s", completed, got)
	}
}
