package pgserver

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestAsyncStandbyFailoverRewinds: a commit made before Stall survives a
// failover; two commits acknowledged after it are gone, on a new timeline.
// A second cycle on the rebuilt standby does the same.
func TestAsyncStandbyFailoverRewinds(t *testing.T) {
	t.Parallel()
	srv := startTestTopology(t, AsyncStandby)
	if srv.Fault() != FaultFailover || !srv.Topology.Rewinds() {
		t.Fatalf("async-standby: fault %q, rewinds %v", srv.Fault(), srv.Topology.Rewinds())
	}
	conn := connectFront(t, srv)
	mustExec(t, conn, "CREATE TABLE failover_probe (v int)")
	kept := []int{}
	for cycle, timeline := range []int{2, 3} {
		before, after := 10*cycle+1, 10*cycle+2
		insertEach(t, conn, "failover_probe", before)
		kept = append(kept, before)
		rep := stallAndFailOver(t, srv, func() { insertEach(t, conn, "failover_probe", after, after+1) })
		t.Logf("cycle %d: %v", cycle+1, rep)
		if rep.Timeline != timeline || rep.LostWAL <= 0 {
			t.Fatalf("cycle %d: timeline %d and %d bytes of WAL lost, want timeline %d and a loss",
				cycle+1, rep.Timeline, rep.LostWAL, timeline)
		}
		conn = reconnectAfterFailover(t, srv, conn)
		wantRows(t, conn, "failover_probe", kept...)
	}
}

// TestSyncStandbyFailoverKeepsAcknowledgedCommits: after Stall a commit
// waits on the standby; Failover ends it with an error (an unknown
// outcome) and keeps every commit acknowledged before.
func TestSyncStandbyFailoverKeepsAcknowledgedCommits(t *testing.T) {
	t.Parallel()
	srv := startTestTopology(t, SyncStandby)
	if srv.Fault() != FaultFailover || srv.Topology.Rewinds() {
		t.Fatalf("sync-standby: fault %q, rewinds %v", srv.Fault(), srv.Topology.Rewinds())
	}
	conn := connectFront(t, srv)
	mustExec(t, conn, "CREATE TABLE sync_probe (v int)")
	insertEach(t, conn, "sync_probe", 1, 2)
	waiter := connectFront(t, srv)
	done := make(chan error, 1)
	rep := stallAndFailOver(t, srv, func() {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := waiter.Exec(ctx, "INSERT INTO sync_probe VALUES (3)")
			done <- err
		}()
		waitForSyncRep(t, conn)
		select {
		case err := <-done:
			t.Fatalf("a commit returned while the standby was stalled: %v", err)
		default:
		}
	})
	t.Logf("%v", rep)
	var waited error
	select {
	case waited = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the commit that waited on the stalled standby still waits after the failover")
	}
	if waited == nil {
		t.Fatal("the commit that waited on the stalled standby succeeded at the failover, want an error")
	}
	if rep.Timeline != 2 {
		t.Fatalf("timeline %d after one failover, want 2", rep.Timeline)
	}
	conn = reconnectAfterFailover(t, srv, conn)
	got := readRows(t, conn, "sync_probe")
	if !slices.Equal(got, []int{1, 2}) && !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("after failover: %v, want [1 2] and maybe 3", got)
	}
	t.Logf("the commit that waited on the standby (%v) is there after failover: %v", waited, len(got) == 3)
}

// stallAndFailOver marks everything durable, stalls replication, runs
// during (commits the standby must not see) and fails over.
func stallAndFailOver(t *testing.T, srv *Server, during func()) FailoverReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.MarkDurable(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stall(ctx); err != nil {
		t.Fatal(err)
	}
	during()
	rep, err := srv.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// reconnectAfterFailover checks that the old connection was cut and that
// a new one through the same ConnString reaches a primary.
func reconnectAfterFailover(t *testing.T, srv *Server, old *pgx.Conn) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := old.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("a connection from before the failover still works")
	}
	conn := connectFront(t, srv)
	var recovering bool
	if err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovering); err != nil || recovering {
		t.Fatalf("the front leads to a server in recovery=%v (%v), want the new primary", recovering, err)
	}
	return conn
}

// waitForSyncRep waits until some backend waits for the synchronous
// standby: the proof that a commit is held by replication, not just slow.
func waitForSyncRep(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'").Scan(&n); err != nil {
			t.Fatalf("no commit waits on the stalled standby: %v", err)
		}
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
