package worker

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// TestExitedWorkersStatementCannotLandLater: a worker executable killed
// just after it sent a statement can leave that statement unread in its
// backend's socket, the backend idle. Ending it by its name then must not
// stop at the backends that are not idle: the statement would run when the
// backend got to it, after the harness had recorded its outcome as unknown
// (a linearizability false alarm once, on a loaded machine). Here the
// backend is stopped (SIGSTOP) while the statement is sent and the client's
// socket closed, and let go while the harness waits: once AwaitGone
// returns, the row must not change any more.
func TestExitedWorkersStatementCannotLandLater(t *testing.T) {
	inst, _ := setup(t, v2Protocol)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := inst.Conn.Exec(ctx, "CREATE TABLE exited_probe (v int); INSERT INTO exited_probe VALUES (0)"); err != nil {
		t.Fatal(err)
	}
	app := appName("w9", false)
	victim := connectAs(ctx, t, inst, app)
	var pid uint32
	if err := victim.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(int(pid), syscall.SIGSTOP); err != nil {
		t.Fatalf("stop the backend: %v", err)
	}
	resumed := make(chan struct{})
	go func() {
		defer close(resumed)
		time.Sleep(400 * time.Millisecond)
		syscall.Kill(int(pid), syscall.SIGCONT)
	}()
	defer func() { <-resumed }()
	go victim.Exec(context.Background(), "UPDATE exited_probe SET v = 1")
	time.Sleep(100 * time.Millisecond) // the statement is in the backend's socket
	victim.PgConn().Conn().Close()     // as the process's death closes it

	b := Backend{App: app, Pooled: true, direct: true}.Exited()
	if err := b.Terminate(ctx, inst.Conn); err != nil {
		t.Fatal(err)
	}
	if err := b.AwaitGone(ctx, inst.Conn); err != nil {
		t.Fatal(err)
	}
	read := func() (v int) {
		if err := inst.Conn.QueryRow(ctx, "SELECT v FROM exited_probe").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	at := read()
	<-resumed
	time.Sleep(300 * time.Millisecond)
	if later := read(); later != at {
		t.Fatalf("exited_probe.v was %d when the backend was reported gone and %d later: the dead worker's statement landed after its end", at, later)
	}
}
