package pgserver

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestAwaitPIDWaitsForTheProcess: a process that is not yet in
// pg_stat_activity when awaitPID first looks (as the WAL writer may not be
// right after a crash's recovery) is waited for, and its pid returned; one
// that never comes is an error once the context ends, not a hang.
func TestAwaitPIDWaitsForTheProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := Shared()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const query = "SELECT pid FROM pg_stat_activity WHERE application_name = 'outboxlab-await-pid'"

	late := make(chan int, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		cfg, err := pgx.ParseConfig(srv.ConnString())
		if err != nil {
			late <- -1
			return
		}
		cfg.RuntimeParams["application_name"] = "outboxlab-await-pid"
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			late <- -1
			return
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		late <- int(c.PgConn().PID())
	}()
	start := time.Now()
	pid, err := awaitPID(ctx, conn, query)
	want := <-late
	if err != nil || pid != want || want <= 0 {
		t.Fatalf("awaitPID = %d, %v; want the late connection's pid %d", pid, err, want)
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Fatalf("awaitPID returned after %v, before the process connected", waited)
	}

	short, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	defer stop()
	if pid, err := awaitPID(short, conn, "SELECT pid FROM pg_stat_activity WHERE application_name = 'outboxlab-never'"); err == nil {
		t.Fatalf("awaitPID of a process that never comes = %d, want an error when its context ends", pid)
	}
}
