package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
)

// TestBlockedByNamesOnlyTheChecksSessions: a statement that waits on a row
// lock is blocked only when one of the named holders (the check's live
// workers) holds it. Behind a session not named (here a connection of the
// test's; on a loaded machine, autovacuum or a killed worker's backend)
// the same wait is not blocked and the statement is waited out; behind a
// worker it is, and the error names the worker. A probe whose pid is not
// the named connection's (a pid the server has since given another
// session) finds nothing.
func TestBlockedByNamesOnlyTheChecksSessions(t *testing.T) {
	inst, w1 := setup(t, v2Protocol)
	claim := do(t, w1, Request{Op: "claim"})
	if len(claim.Rows) != 2 {
		t.Fatalf("claim = %+v, want e1 and e2", claim)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const stranger = "outboxlab test stranger"
	other := connectAs(ctx, t, inst, stranger)
	lockRow(ctx, t, other, claim.Rows[0].ID)

	var asked, named []string
	released := false
	probe := func(b Backend) string {
		notHeld, err := b.BlockedBy(ctx, inst.Conn, []string{w1.AppName(), "outboxlab nobody"})
		held, err2 := b.BlockedBy(ctx, inst.Conn, []string{stranger})
		if err := errors.Join(err, err2); err != nil {
			t.Errorf("probe: %v", err)
		}
		asked, named = append(asked, notHeld), append(named, held)
		if held != "" && !released {
			released = true
			if _, err := other.Exec(ctx, "COMMIT"); err != nil {
				t.Errorf("release the stranger's lock: %v", err)
			}
		}
		return notHeld
	}
	row := claim.Rows[0]
	resp, err := w1.DoWatched(Request{Op: "complete", ID: row.ID, Gen: row.Gen}, 10*time.Millisecond, probe)
	if err != nil || !resp.Applied {
		t.Fatalf("complete behind the stranger's lock = %+v, %v; want applied once it let go", resp, err)
	}
	if !slices.Contains(named, stranger) || slices.ContainsFunc(asked, func(s string) bool { return s != "" }) {
		t.Fatalf("probes naming the stranger %q, naming only workers %q: want the stranger found once and never blamed on a worker", named, asked)
	}

	// A worker's open claim holds the next rows: now the wait is blocked.
	srv, err := pgserver.Shared()
	if err != nil {
		t.Fatal(err)
	}
	w2, err := Spawn(Spec{Name: "w2", ConnString: srv.ConnString(), Statements: inst.Statements, OpTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w2.Kill() })
	held := do(t, w2, Request{Op: "begin"})
	if len(held.Rows) != 2 {
		t.Fatalf("w2 begin = %+v, want e3 and e4", held)
	}
	holders := []string{w1.AppName(), w2.AppName()}
	stalePID := Backend{PID: w2.Backend, App: w1.AppName()}
	var stale []string
	_, err = w1.DoWatched(Request{Op: "complete", ID: held.Rows[0].ID, Gen: 1}, 10*time.Millisecond, func(b Backend) string {
		by, _ := stalePID.BlockedBy(ctx, inst.Conn, holders)
		stale = append(stale, by)
		by, _ = b.BlockedBy(ctx, inst.Conn, holders)
		return by
	})
	var blocked *BlockedError
	if !errors.Is(err, ErrBlocked) || !errors.As(err, &blocked) || blocked.By != w2.AppName() {
		t.Fatalf("complete behind w2's open claim: %v, want blocked by %q", err, w2.AppName())
	}
	if slices.ContainsFunc(stale, func(s string) bool { return s != "" }) {
		t.Errorf("a probe of w1's name with w2's pid found %q, want nothing", stale)
	}
}

// connectAs opens a connection to inst's schema named app, closed with the
// test.
func connectAs(ctx context.Context, t *testing.T, inst *sut.Instance, app string) *pgx.Conn {
	t.Helper()
	srv, err := pgserver.Shared()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := sut.ConnConfig(srv.ConnString(), inst.Statements.Schema)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = app
	conn, err := sut.ConnectWith(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// lockRow opens a transaction on conn that holds row id's lock.
func lockRow(ctx context.Context, t *testing.T, conn *pgx.Conn, id string) {
	t.Helper()
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("SELECT 1 FROM outbox_lab WHERE id = %s FOR UPDATE", id)); err != nil {
		t.Fatal(err)
	}
}
