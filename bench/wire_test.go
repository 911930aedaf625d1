package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// wireConn connects with an application_name of its own, so that the
// test can find its backend in pg_stat_activity.
func wireConn(t *testing.T, app string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(server(t).ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = app
	cfg.DialFunc = dialRaw
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func openWire(t *testing.T, ctx context.Context, app string, sqls []string, nparams []int, arg string, counted int) *wireTx {
	t.Helper()
	w, err := openWireTx(ctx, wireConn(t, app), sqls, nparams, arg, counted)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.close)
	return w
}

// TestWireTxRows: the counted statement's rows, its parameter bound to
// the argument as text.
func TestWireTxRows(t *testing.T) {
	w := openWire(t, context.Background(), "outboxlab-wire-rows",
		[]string{"BEGIN", "SELECT $1::text FROM generate_series(1, length($1))", "ROLLBACK"}, []int{0, 1, 0}, "four", 1)
	for range 2 {
		if n, err := w.run(); n != 4 || err != nil {
			t.Fatalf("run = %d, %v, want the 4 rows of generate_series(1, length('four'))", n, err)
		}
	}
}

// TestWireTxEndsRefusedTransaction: a statement the server refuses is
// reported, the rest skipped, and the last statement (ROLLBACK) still
// sent, so the next run starts clean and meets the same refusal, not an
// aborted transaction. The mutant without its ROLLBACK leaves the
// transaction aborted and the check must see it.
func TestWireTxEndsRefusedTransaction(t *testing.T) {
	sqls := []string{"BEGIN", "SELECT 1 / (length($1) - 2)", "SELECT 1", "ROLLBACK"}
	w := openWire(t, context.Background(), "outboxlab-wire-refused", sqls, []int{0, 1, 0, 0}, "ab", 2)
	if err := refusedTwice(w); err != nil {
		t.Error(err)
	}
	mutant := openWire(t, context.Background(), "outboxlab-wire-refused", sqls[:3], []int{0, 1, 0}, "ab", 2)
	if err := refusedTwice(mutant); err == nil || !strings.Contains(err.Error(), "25P02") {
		t.Errorf("mutant without ROLLBACK: %v, want the second run in an aborted transaction (25P02)", err)
	}
}

// refusedTwice runs w twice and wants division by zero both times.
func refusedTwice(w *wireTx) error {
	for i := range 2 {
		_, err := w.run()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "22012" {
			return fmt.Errorf("run %d: %s, want division_by_zero (22012)", i+1, errString(err))
		}
	}
	return nil
}

func errString(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code + " " + pe.Message
	}
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// TestWireTxDeadline: a server that does not answer within the timeout
// fails the call with the socket's deadline. The mutant, a timeout longer
// than the server's sleep, gets its answer and the check must see it.
func TestWireTxDeadline(t *testing.T) {
	sleeping := []string{"SELECT pg_sleep(2)"}
	w := openWire(t, context.Background(), "outboxlab-wire-deadline", sleeping, []int{0}, "", 0)
	w.timeout = 200 * time.Millisecond
	if err := timedOut(w); err != nil {
		t.Error(err)
	}
	mutant := openWire(t, context.Background(), "outboxlab-wire-deadline", sleeping, []int{0}, "", 0)
	mutant.timeout = time.Minute
	if timedOut(mutant) == nil {
		t.Error("mutant with a timeout of a minute: the check saw a timeout")
	}
}

func timedOut(w *wireTx) error {
	_, err := w.run()
	if !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "no reply within "+w.timeout.String()) {
		return fmt.Errorf("run: %s, want no reply within %v", errString(err), w.timeout)
	}
	return nil
}

// TestWireTxCancel: cancelling the context interrupts a call while the
// server is still working on it. The mutant's context is not cancelled
// with it (context.WithoutCancel), so it waits for the answer, and the
// check must see that.
func TestWireTxCancel(t *testing.T) {
	if err := interrupted(t, func(ctx context.Context) context.Context { return ctx }); err != nil {
		t.Error(err)
	}
	if interrupted(t, context.WithoutCancel) == nil {
		t.Error("mutant that ignores the cancellation: the check saw an interruption")
	}
}

// interrupted starts pg_sleep(3) through a wireTx opened on wrap(ctx),
// cancels ctx once the server runs the sleep, and wants the run to end
// in context.Canceled while the server is still asleep.
func interrupted(t *testing.T, wrap func(context.Context) context.Context) error {
	const app = "outboxlab-wire-cancel"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := openWire(t, wrap(ctx), app, []string{"SELECT pg_sleep(3)"}, []int{0}, "", 0)
	watch := wireConn(t, "outboxlab-wire-watch")
	defer watch.Close(context.Background())
	done := make(chan error, 1)
	go func() { _, err := w.run(); done <- err }()
	asleep := func() bool {
		qctx, qcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer qcancel()
		var n int
		err := watch.QueryRow(qctx, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND state = 'active' AND query LIKE '%pg_sleep%'`, app).Scan(&n)
		return err == nil && n > 0
	}
	for !asleep() {
		select {
		case err := <-done:
			return fmt.Errorf("the run ended before the server slept: %s", errString(err))
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		return fmt.Errorf("run: %s, want context.Canceled", errString(err))
	}
	if !asleep() {
		return errors.New("the run ended in context.Canceled only once the server had answered")
	}
	return nil
}
