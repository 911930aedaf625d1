package worker

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
)

// Worker processes running the format's second version: batch claims,
// sections of several statements and the rescue op. A real PostgreSQL
// server from pgserver.Shared(); without one the tests fail.

func TestMain(m *testing.M) {
	MainIfWorker()
	os.Exit(func() int {
		defer pgserver.CloseShared()
		return m.Run()
	}())
}

// v2Protocol is the article's table with a two-row claim through a temp
// table, a complete of two statements and a rescue.
const v2Protocol = `-- outboxlab: batch=2
-- name: schema
CREATE TABLE outbox_lab (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id text NOT NULL UNIQUE,
    status text NOT NULL DEFAULT 'READY',
    generation bigint NOT NULL DEFAULT 0,
    lease_until timestamptz,
    next_attempt_at timestamptz NOT NULL DEFAULT statement_timestamp()
);
-- name: claim
CREATE TEMP TABLE picked ON COMMIT DROP AS
    SELECT id FROM outbox_lab
    WHERE (status = 'READY' AND next_attempt_at <= statement_timestamp())
       OR (status = 'INPROGRESS' AND lease_until <= statement_timestamp())
    ORDER BY id LIMIT 2
    FOR UPDATE SKIP LOCKED;
UPDATE outbox_lab AS o
SET status = 'INPROGRESS', generation = o.generation + 1,
    lease_until = statement_timestamp() + interval '30 seconds'
FROM picked AS p WHERE o.id = p.id
RETURNING o.id, o.event_id, o.generation;
-- name: complete
SELECT id FROM outbox_lab WHERE id = @id::bigint FOR UPDATE;
UPDATE outbox_lab SET status = 'SENT', lease_until = NULL
WHERE id = @id AND generation = @generation AND lease_until > clock_timestamp()
RETURNING id;
-- name: retry
UPDATE outbox_lab SET status = 'READY', lease_until = NULL
WHERE id = @id AND generation = @generation AND lease_until > clock_timestamp()
RETURNING id;
-- name: rescue
UPDATE outbox_lab SET status = 'READY', lease_until = NULL
WHERE status = 'INPROGRESS' AND lease_until <= statement_timestamp() AND @worker <> '';
`

func setup(t *testing.T, src string) (*sut.Instance, *Process) {
	t.Helper()
	srv, err := pgserver.Shared()
	if err != nil {
		t.Fatalf("PostgreSQL server: %v", err)
	}
	p, err := sut.Parse("v2", "v2.sql", src)
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
	if err := inst.Reset(ctx, []string{"e1", "e2", "e3", "e4", "e5"}); err != nil {
		t.Fatal(err)
	}
	proc, err := Spawn(Spec{Name: "w1", ConnString: srv.ConnString(), Statements: inst.Statements, OpTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Kill() })
	return inst, proc
}

func do(t *testing.T, p *Process, req Request) Response {
	t.Helper()
	resp, err := p.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", req.Op, err)
	}
	return resp
}

// statuses reads what is committed, over the checking connection.
func statuses(t *testing.T, inst *sut.Instance) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := inst.Statements.ReadState(ctx, inst.Conn)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, r.Event+":"+string(r.Status))
	}
	return strings.Join(out, " ")
}

func TestWorkerBatchClaimOfSeveralStatements(t *testing.T) {
	inst, w := setup(t, v2Protocol)
	resp := do(t, w, Request{Op: "claim"})
	want := Response{Found: true, ID: "1", Event: "e1", Gen: 1, Backend: resp.Backend,
		Rows: []ClaimRow{{ID: "1", Event: "e1", Gen: 1}, {ID: "2", Event: "e2", Gen: 1}}}
	if !reflect.DeepEqual(resp, want) {
		t.Fatalf("claim = %+v, want %+v", resp, want)
	}
	if got := statuses(t, inst); got != "e1:INPROGRESS e2:INPROGRESS e3:READY e4:READY e5:READY" {
		t.Errorf("after the claim: %s", got)
	}

	// In an open transaction the claim's statements stay uncommitted
	// until the commit, and a rollback takes them all back.
	resp = do(t, w, Request{Op: "begin"})
	if resp.Err != "" || len(resp.Rows) != 2 || resp.Rows[1].Event != "e4" {
		t.Fatalf("begin = %+v, want e3 and e4", resp)
	}
	if got := statuses(t, inst); got != "e1:INPROGRESS e2:INPROGRESS e3:READY e4:READY e5:READY" {
		t.Errorf("during the open claim: %s", got)
	}
	if resp := do(t, w, Request{Op: "rollback"}); resp.Err != "" {
		t.Fatalf("rollback: %s", resp.Err)
	}
	if resp := do(t, w, Request{Op: "begin"}); resp.Err != "" || resp.Event != "e3" || resp.Gen != 1 {
		t.Fatalf("begin after the rollback = %+v, want e3 generation 1", resp)
	}
	if resp := do(t, w, Request{Op: "commit"}); resp.Err != "" {
		t.Fatalf("commit: %s", resp.Err)
	}

	// A complete of two statements, which prepare left to pgx's cache.
	for _, tt := range []struct {
		gen  int64
		want bool
	}{{2, false}, {1, true}, {1, false}} {
		if resp := do(t, w, Request{Op: "complete", ID: "1", Gen: tt.gen}); resp.Err != "" || resp.Applied != tt.want {
			t.Errorf("complete(1, %d) = %+v, want applied %v", tt.gen, resp, tt.want)
		}
	}
	resp = do(t, w, Request{Op: "claim"})
	if len(resp.Rows) != 1 || resp.Event != "e5" {
		t.Errorf("last claim = %+v, want e5 alone", resp)
	}
	if resp := do(t, w, Request{Op: "claim"}); resp.Found || resp.Rows != nil || resp.Err != "" {
		t.Errorf("claim with nothing claimable = %+v, want an empty response", resp)
	}
	if got := statuses(t, inst); got != "e1:SENT e2:INPROGRESS e3:INPROGRESS e4:INPROGRESS e5:INPROGRESS" {
		t.Errorf("at the end: %s", got)
	}
}

func TestWorkerRescue(t *testing.T) {
	inst, w := setup(t, v2Protocol)
	if resp := do(t, w, Request{Op: "claim"}); len(resp.Rows) != 2 {
		t.Fatalf("claim = %+v, want e1 and e2", resp)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := inst.Statements.Exec(ctx, inst.Conn, sut.Expire, sut.Args{ID: "2"}); err != nil {
		t.Fatal(err)
	}
	if resp := do(t, w, Request{Op: "rescue"}); !reflect.DeepEqual(resp, Response{Backend: resp.Backend}) || resp.Backend == 0 {
		t.Errorf("rescue = %+v, want an empty response", resp)
	}
	if got := statuses(t, inst); got != "e1:INPROGRESS e2:READY e3:READY e4:READY e5:READY" {
		t.Errorf("after the rescue: %s", got)
	}
	// Without a rescue section the op fails, as renew does without one.
	src := strings.Split(v2Protocol, "-- name: rescue")[0]
	_, w2 := setup(t, src)
	if resp := do(t, w2, Request{Op: "rescue"}); !strings.Contains(resp.Err, "no rescue section") {
		t.Errorf("rescue without a section = %+v, want an error", resp)
	}
}

// TestWorkerClaimTooManyRows: a claim that returns more than its batch is
// the protocol's failure; the worker keeps its connection.
func TestWorkerClaimTooManyRows(t *testing.T) {
	_, w := setup(t, strings.Replace(v2Protocol, "batch=2", "batch=1", 1))
	first := do(t, w, Request{Op: "claim"})
	if !first.Protocol || first.Err != "claim returned 2 rows" || first.ServerErr || first.Timeout {
		t.Errorf("claim = %+v, want the protocol error %q", first, "claim returned 2 rows")
	}
	// The refused claim was rolled back: the next one finds the same rows.
	again := do(t, w, Request{Op: "claim"})
	if again.Err != first.Err || again.Backend != first.Backend {
		t.Errorf("second claim = %+v, want the same error on the same backend %d", again, first.Backend)
	}
}

// TestResponseRowsWire pins the rows' JSON, which the parent decodes.
func TestResponseRowsWire(t *testing.T) {
	b, err := json.Marshal(claimed([]sut.ClaimResult{{Found: true, ID: "7", Event: "e1", Gen: 2}, {Found: true, ID: "9", Event: "e2"}}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"found":true,"id":"7","event":"e1","gen":2,"rows":[{"id":"7","event":"e1","gen":2},{"id":"9","event":"e2","gen":0}]}`
	if string(b) != want {
		t.Errorf("JSON %s, want %s", b, want)
	}
	if b, _ := json.Marshal(claimed([]sut.ClaimResult{})); string(b) != `{}` {
		t.Errorf("an empty claim's JSON %s, want {}", b)
	}
}
