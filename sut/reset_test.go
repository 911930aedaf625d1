package sut

import (
	"os"
	"testing"
)

// TestResetEnqueuesEachEventInItsOwnTransaction: the reset enqueues as
// producers do, one transaction an event, so a created_at DEFAULT now()
// differs from event to event. In one transaction (or in one message of
// several transactions, which share the message's start as now()) every
// event's created_at tied, and a claim ordered by it took rows in the
// plan's order.
func TestResetEnqueuesEachEventInItsOwnTransaction(t *testing.T) {
	ctx := testContext(t)
	src, err := os.ReadFile("../testdata/correct/leased_created_at.sql")
	if err != nil {
		t.Fatal(err)
	}
	inst := mustInstall(t, mustParse(t, string(src)))
	events := []string{"e1", "e2", "e3", "e4"}
	for range 2 { // the second from the cached statements
		if err := inst.Reset(ctx, events); err != nil {
			t.Fatal(err)
		}
		var rows, transactions, times int
		err := inst.Conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT xmin::text), count(DISTINCT created_at) FROM outbox_lab`).
			Scan(&rows, &transactions, &times)
		if err != nil {
			t.Fatal(err)
		}
		if rows != len(events) || transactions != len(events) || times != len(events) {
			t.Fatalf("after Reset(%v): %d rows, from %d transactions, with %d created_at values; want %d of each",
				events, rows, transactions, times, len(events))
		}
	}
}
