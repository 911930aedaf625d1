package sut

import (
	"testing"
)

// TestProbeRow: the probe tells a row another transaction locks for update
// (held: the fixtures wait, the claims skip it), one that a foreign key
// check's KEY SHARE locks (maybe: a claim's FOR UPDATE skips it, the
// fixture's UPDATE does not wait), and one nobody locks (free), and
// changes nothing.
func TestProbeRow(t *testing.T) {
	ctx := testContext(t)
	inst := installed(t, "", nil)
	if !inst.ProbesRows() {
		t.Fatal("the default expire fixture is a plain update by @id: ProbesRows must hold")
	}
	ids := map[string]string{}
	rows, err := inst.Statements.ReadState(ctx, inst.Conn)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		ids[r.Event] = r.ID
	}
	if _, err := inst.Conn.Exec(ctx, "CREATE TABLE child (parent bigint REFERENCES outbox_lab (id))"); err != nil {
		t.Fatal(err)
	}
	other, err := Connect(ctx, inst.ConnString, inst.Statements.Schema)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM outbox_lab WHERE id = $1::bigint FOR UPDATE", ids["e1"]); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO child VALUES ($1::bigint)", ids["e2"]); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		event string
		want  RowLock
	}{{"e1", RowHeld}, {"e2", RowMaybe}, {"e3", RowFree}} {
		got, err := inst.ProbeRow(ctx, Due, ids[tt.event])
		if err != nil || got != tt.want {
			t.Errorf("ProbeRow(%s) = %v, %v; want %v", tt.event, got, err, tt.want)
		}
	}
	if got := statuses(t, inst); got != "e1:READY e2:READY e3:READY e4:READY" {
		t.Errorf("the probes changed rows: %s", got)
	}
}

// TestForUpdateProbe: only a plain update of one table by @id gives a
// FOR UPDATE probe; a join or a subquery may update another row than the
// event's (a worker's heartbeat).
func TestForUpdateProbe(t *testing.T) {
	for _, tt := range []struct {
		sql, want string
	}{
		{"UPDATE outbox_lab SET lease_until = now() WHERE id = $1 AND status = 'INPROGRESS'", "SELECT 1 FROM outbox_lab WHERE id::text = $1::text FOR UPDATE"},
		{"update q SET vt = now() WHERE msg_id = $1", "SELECT 1 FROM q WHERE msg_id::text = $1::text FOR UPDATE"},
		{"UPDATE p SET beat = now() FROM jobs AS j WHERE j.id = $1 AND p.id = j.worker", ""},
		{"UPDATE p SET beat = now() WHERE id = (SELECT worker FROM jobs WHERE id = $1)", ""},
	} {
		if got := forUpdateProbe(Stmt{SQL: tt.sql, Params: []string{"id"}}); got != tt.want {
			t.Errorf("forUpdateProbe(%q) = %q, want %q", tt.sql, got, tt.want)
		}
	}
}
