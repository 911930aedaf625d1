package sut

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/pgserver"
)

// Server-level tests: a real PostgreSQL server from pgserver.Shared(). They
// never skip; without a server they fail.

func TestMain(m *testing.M) {
	os.Exit(func() int {
		defer pgserver.CloseShared()
		return m.Run()
	}())
}

func server(t testing.TB) *pgserver.Server {
	t.Helper()
	srv, err := pgserver.Shared()
	if err != nil {
		t.Fatalf("PostgreSQL server: %v", err)
	}
	return srv
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustParse(t testing.TB, src string) *Protocol {
	t.Helper()
	p, err := Parse("test", "test.sql", src)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

func mustInstall(t testing.TB, p *Protocol) *Instance {
	t.Helper()
	inst, err := Install(testContext(t), server(t).ConnString(), p)
	if err != nil {
		t.Fatalf("Install: %v", err)
	}
	t.Cleanup(inst.Close)
	return inst
}

// lineOf is the 1-based line of src holding marker, which must occur once.
func lineOf(t testing.TB, src, marker string) int {
	t.Helper()
	if n := strings.Count(src, marker); n != 1 {
		t.Fatalf("marker %q occurs %d times", marker, n)
	}
	return 1 + strings.Count(src[:strings.Index(src, marker)], "\n")
}

// The article's table and statements, for building protocols that differ
// from it in one section.
const (
	labSchema = `CREATE TABLE outbox_lab (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id text NOT NULL UNIQUE,
    status text NOT NULL DEFAULT 'READY'
        CHECK (status IN ('READY', 'INPROGRESS', 'SENT')),
    generation bigint NOT NULL DEFAULT 0,
    lease_until timestamptz,
    next_attempt_at timestamptz NOT NULL DEFAULT statement_timestamp(),
    CHECK ((status = 'INPROGRESS') = (lease_until IS NOT NULL))
);`
	labClaim = `WITH candidate AS (
    SELECT id FROM outbox_lab
    WHERE (status = 'READY' AND next_attempt_at <= statement_timestamp())
       OR (status = 'INPROGRESS' AND lease_until <= statement_timestamp())
    ORDER BY id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox_lab AS o
SET status = 'INPROGRESS', generation = o.generation + 1,
    lease_until = statement_timestamp() + interval '30 seconds'
FROM candidate AS c
WHERE o.id = c.id
RETURNING o.id, o.event_id, o.generation;`
	labClaimNoGen = `UPDATE outbox_lab
SET status = 'INPROGRESS', lease_until = statement_timestamp() + interval '30 seconds'
WHERE id = (SELECT id FROM outbox_lab WHERE status = 'READY' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, event_id;`
	labComplete = `UPDATE outbox_lab SET status = 'SENT', lease_until = NULL
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
  AND lease_until > clock_timestamp()
RETURNING id;`
	labRetry = `UPDATE outbox_lab
SET status = 'READY', lease_until = NULL,
    next_attempt_at = statement_timestamp() + interval '1 minute'
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
  AND lease_until > clock_timestamp()
RETURNING id;`
)

// lab builds a protocol text from the article's sections, with some replaced
// or added; sections come in a fixed order, each after a blank line.
func lab(override map[string]string) string {
	sections := map[string]string{Schema: labSchema, Claim: labClaim, Complete: labComplete, Retry: labRetry}
	for k, v := range override {
		sections[k] = v
	}
	var b strings.Builder
	b.WriteString("-- A test protocol.\n-- outboxlab: order=fifo\n")
	for _, name := range []string{Schema, Claim, Complete, Retry, Renew, Rescue, Enqueue, State, Expire, Due, Age} {
		if sql, ok := sections[name]; ok {
			fmt.Fprintf(&b, "\n-- name: %s\n%s\n", name, sql)
		}
	}
	return b.String()
}

func TestInstallErrors(t *testing.T) {
	tests := []struct {
		name     string
		override map[string]string
		// marker is the text on the line the error must point at.
		marker string
		words  []string
	}{
		{"syntax error in the schema",
			map[string]string{Schema: labSchema + "\n\nCREATE TABLE extra (\n    id int,\n    note text,, x int\n);"},
			"note text,,", []string{"section schema", "syntax error", "42601"}},
		{"syntax error in the first schema statement",
			map[string]string{Schema: "-- leading comment\n\nCREATE TABLE outbox_lab (\n    id bigint PRIMARY KEY\n    event_id text\n);"},
			"    event_id text", []string{"section schema", "syntax error"}},
		{"syntax error in claim",
			map[string]string{Claim: "SELECT id, event_id, generation\nFROM outbox_lab\nWHERE status = 'READY'\n  AND AND true\nLIMIT 1"},
			"AND AND", []string{"section claim", "syntax error", "42601"}},
		// Positions count in the statement as sent, where @generation
		// is $2: the line must still be the offending token's.
		{"syntax error after a line with @generation",
			map[string]string{Complete: "UPDATE outbox_lab SET status = 'SENT'\nWHERE id = @id AND generation = @generation\n  AND AND lease_until > clock_timestamp()\nRETURNING id"},
			"AND AND lease_until", []string{"section complete", "syntax error", "42601"}},
		{"unknown column after a line of parameters",
			map[string]string{Renew: "UPDATE outbox_lab SET lease_until = now() + interval '30 seconds'\nWHERE id = @id AND generation = @generation AND @worker <> '' AND @id IS NOT NULL\n  AND no_such_column\nRETURNING id"},
			"AND no_such_column", []string{"section renew", "no_such_column", "42703"}},
		{"error after parameters and multi-byte characters",
			map[string]string{Complete: "UPDATE outbox_lab SET status = 'SENT' -- déjà vu, naïve café\nWHERE id = @id\n  AND generation = @generation\n  AND lease_until >>> clock_timestamp()\nRETURNING id"},
			"lease_until >>>", []string{"section complete", "operator does not exist"}},
		{"error at a parameter",
			map[string]string{Retry: "UPDATE outbox_lab SET status = 'READY'\nWHERE id = @id\n  AND generation = @generation\n  AND @generation\nRETURNING id"},
			"  AND @generation\n", []string{"section retry", "argument of AND must be type boolean"}},
		{"syntax error at the end of input",
			map[string]string{Claim: "SELECT id, event_id FROM outbox_lab\nWHERE status IN (\n\n"},
			"WHERE status IN (", []string{"section claim", "syntax error at end of input"}},
		{"claim missing event_id",
			map[string]string{Claim: "SELECT id, generation FROM outbox_lab LIMIT 1"},
			"-- name: claim", []string{`section "claim"`, "missing result column(s) event_id"}},
		{"claim with an extra column",
			map[string]string{Claim: "SELECT id, event_id, generation, status\nFROM outbox_lab LIMIT 1"},
			"-- name: claim", []string{`section "claim"`, `returns column "status"`, "expected columns"}},
		{"claim returning a column twice",
			map[string]string{Claim: "SELECT id, event_id, event_id FROM outbox_lab LIMIT 1"},
			"-- name: claim", []string{`section "claim"`, `"event_id" twice`}},
		{"claim whose generation is text",
			map[string]string{Claim: "SELECT id, event_id, generation::text AS generation FROM outbox_lab LIMIT 1"},
			"-- name: claim", []string{`section "claim"`, `column "generation" must be bigint`}},
		{"claim whose event_id is a number",
			map[string]string{Claim: "SELECT id, id AS event_id FROM outbox_lab LIMIT 1"},
			"-- name: claim", []string{`section "claim"`, `column "event_id" must be text`}},
		{"state without due",
			map[string]string{State: "SELECT id, event_id, status, generation,\n    lease_until <= statement_timestamp() AS lease_expired\nFROM outbox_lab ORDER BY id"},
			"-- name: state", []string{`section "state"`, "missing result column(s) due"}},
		{"state without generation when claim has one",
			map[string]string{State: "SELECT id, event_id, status, NULL::boolean AS lease_expired, true AS due FROM outbox_lab"},
			"-- name: state", []string{`section "state"`, "missing result column(s) generation"}},
		{"state with generation when claim has none",
			map[string]string{
				Claim:    labClaimNoGen,
				Complete: "UPDATE outbox_lab SET status = 'SENT' WHERE id = @id RETURNING id",
				Retry:    "UPDATE outbox_lab SET status = 'READY' WHERE id = @id RETURNING id",
				State:    "SELECT id, event_id, status, generation, NULL::boolean AS lease_expired, true AS due FROM outbox_lab"},
			"-- name: state", []string{`section "state"`, "returns generation but claim does not"}},
		{"state whose status is a number",
			map[string]string{State: "SELECT id, event_id, 1 AS status, generation, NULL::boolean AS lease_expired, true AS due FROM outbox_lab"},
			"-- name: state", []string{`section "state"`, `column "status" must be text`}},
		{"complete without RETURNING",
			map[string]string{Complete: "UPDATE outbox_lab SET status = 'SENT'\nWHERE id = @id AND generation = @generation"},
			"-- name: complete", []string{`section "complete"`, "returns no columns", "RETURNING"}},
		{"renew without RETURNING",
			map[string]string{Renew: "UPDATE outbox_lab SET lease_until = now() WHERE id = @id AND generation = @generation"},
			"-- name: renew", []string{`section "renew"`, "returns no columns"}},
		{"claim on a table that does not exist",
			map[string]string{Claim: "SELECT id, event_id, generation\nFROM outbox_missing\nLIMIT 1"},
			"FROM outbox_missing", []string{"section claim", `relation "outbox_missing" does not exist`, "42P01"}},
		{"retry on a column that does not exist",
			map[string]string{Retry: "UPDATE outbox_lab SET status = 'READY'\nWHERE id = @id\n  AND generatoin = @generation\nRETURNING id"},
			"generatoin", []string{"section retry", "generatoin", "does not exist"}},
		{"enqueue of a wrong column",
			map[string]string{Enqueue: "INSERT INTO outbox_lab (event) VALUES (@event_id)"},
			"INSERT INTO outbox_lab (event)", []string{"section enqueue", `"event"`}},
		// A section of several statements: each is described after the
		// earlier ones ran, and an error points into its own statement.
		{"unknown column in the second statement of a claim",
			map[string]string{Claim: strings.Replace(pickedClaim("1"), "WHERE o.id = p.id", "WHERE o.id = p.idd", 1)},
			"WHERE o.id = p.idd", []string{"section claim", `p.idd`, "42703"}},
		{"second statement on a table the first did not make",
			map[string]string{Claim: "CREATE TEMP TABLE pickd ON COMMIT DROP AS SELECT id FROM outbox_lab LIMIT 1;\nUPDATE outbox_lab AS o SET generation = o.generation + 1\nFROM picked AS p\nWHERE o.id = p.id RETURNING o.id, o.event_id, o.generation"},
			"FROM picked AS p", []string{"section claim", `relation "picked" does not exist`, "42P01"}},
		{"syntax error in the first statement of a renew",
			map[string]string{Renew: "SELECT 1\nFROM FROM outbox_lab WHERE id = @id;\n" + strings.Replace(labComplete, "status = 'SENT', lease_until = NULL", "lease_until = now() + interval '30 seconds'", 1)},
			"FROM FROM", []string{"section renew", "syntax error", "42601"}},
		{"a prelude statement that fails when it runs",
			map[string]string{Complete: "SELECT 1 WHERE @id::bigint IS NULL;\n-- then:\nSELECT 1/0;\n" + labComplete},
			"SELECT 1/0", []string{"section complete", "division by zero", "22012"}},
		{"syntax error at the end of a middle statement",
			map[string]string{Rescue: "SELECT 1;\nUPDATE outbox_lab SET status = 'READY'\nWHERE (\n;\nSELECT 2"},
			"WHERE (\n", []string{"section rescue", "syntax error at end of input"}},
		{"error in the last of three statements of a retry",
			map[string]string{Retry: "SELECT 1;\nSELECT 2;\n" + strings.Replace(labRetry, "AND generation = @generation", "AND generaton = @generation", 1)},
			"AND generaton", []string{"section retry", "generaton", "42703"}},
		{"claim columns of the last statement",
			map[string]string{Claim: "SELECT 1 AS id, 'e' AS event_id, 1::bigint AS generation;\nSELECT id, generation FROM outbox_lab LIMIT 1"},
			"-- name: claim", []string{`section "claim"`, "missing result column(s) event_id"}},
		{"complete whose last statement returns no columns",
			map[string]string{Complete: labComplete + "\nUPDATE outbox_lab SET status = status WHERE false"},
			"-- name: complete", []string{`section "complete"`, "returns no columns"}},
		// An own age section is checked like any other; only the default
		// age may be dropped.
		{"age on a column that does not exist",
			map[string]string{Age: "UPDATE outbox_lab\nSET leased_until = leased_until - make_interval(secs => @seconds)\nWHERE id = @id"},
			"SET leased_until", []string{"section age", "leased_until", "does not exist", "42703"}},
		{"age on a table that does not exist",
			map[string]string{Age: "UPDATE jobs SET held_until = held_until - make_interval(secs => @seconds)\nWHERE id = @id"},
			"UPDATE jobs SET held_until", []string{"section age", `relation "jobs" does not exist`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := lab(tt.override)
			p := mustParse(t, src)
			inst, err := Install(testContext(t), server(t).ConnString(), p)
			if err == nil {
				inst.Close()
				t.Fatalf("Install succeeded; want an error at %q", tt.marker)
			}
			if inst != nil {
				t.Errorf("Install returned an instance along with %v", err)
			}
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("error %v (%T) is not a *sut.Error", err, err)
			}
			if want := lineOf(t, src, tt.marker); perr.Line != want || perr.File != "test.sql" {
				t.Errorf("at %s:%d, want test.sql:%d (%q); error: %v", perr.File, perr.Line, want, tt.marker, err)
			}
			for _, w := range tt.words {
				if !strings.Contains(perr.Msg, w) {
					t.Errorf("message %q does not contain %q", perr.Msg, w)
				}
			}
		})
	}
}

// TestInstallSchemaErrorWithoutPosition: an error the server reports without
// a character position still points into the schema section.
func TestInstallSchemaErrorWithoutPosition(t *testing.T) {
	src := lab(map[string]string{Schema: labSchema + "\nCREATE INDEX ON no_such_table (id);"})
	_, err := Install(testContext(t), server(t).ConnString(), mustParse(t, src))
	var perr *Error
	if !errors.As(err, &perr) {
		t.Fatalf("Install: %v, want a *sut.Error", err)
	}
	header, end := lineOf(t, src, "-- name: schema"), lineOf(t, src, "no_such_table")
	if perr.Line < header || perr.Line > end || !strings.Contains(perr.Msg, "no_such_table") {
		t.Errorf("error %v, want a line in %d..%d naming no_such_table", err, header, end)
	}
}

// ownTableWithoutFixtures keeps its events in another table and leaves out
// the optional sections, so the outbox_lab defaults cannot work.
const ownTableWithoutFixtures = `-- outboxlab: order=fifo
-- name: schema
CREATE TABLE jobs (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, event_id text NOT NULL,
    state text NOT NULL DEFAULT 'new', attempt bigint NOT NULL DEFAULT 0);
-- name: claim
UPDATE jobs SET state = 'taken', attempt = attempt + 1
WHERE id = (SELECT id FROM jobs WHERE state = 'new' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, event_id, attempt AS generation
-- name: complete
UPDATE jobs SET state = 'done' WHERE id = @id AND attempt = @generation RETURNING id
-- name: retry
UPDATE jobs SET state = 'new' WHERE id = @id AND attempt = @generation RETURNING id
`

func TestInstallOwnTableNeedsItsOwnFixtures(t *testing.T) {
	_, err := Install(testContext(t), server(t).ConnString(), mustParse(t, ownTableWithoutFixtures))
	var perr *Error
	if !errors.As(err, &perr) {
		t.Fatalf("Install: %v, want a *sut.Error", err)
	}
	for _, w := range []string{"default enqueue statement", "no enqueue section", `relation "outbox_lab" does not exist`} {
		if !strings.Contains(perr.Msg, w) {
			t.Errorf("message %q does not contain %q", perr.Msg, w)
		}
	}
	if perr.Line != 1 {
		t.Errorf("Line = %d, want 1 (a default statement has no line of its own)", perr.Line)
	}
	// With its own enqueue, the next default that fails is named instead.
	src := ownTableWithoutFixtures + "-- name: enqueue\nINSERT INTO jobs (event_id) VALUES (@event_id)\n"
	_, err = Install(testContext(t), server(t).ConnString(), mustParse(t, src))
	if !errors.As(err, &perr) || !strings.Contains(perr.Msg, "default state statement") {
		t.Errorf("Install with enqueue only: %v, want an error naming the default state statement", err)
	}
}

// TestInstallFailureDropsSchema: a failed Install leaves no schema behind.
func TestInstallFailureDropsSchema(t *testing.T) {
	srv := server(t)
	ctx := testContext(t)
	conn, err := pgx.Connect(ctx, srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	count := func() int {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'outboxlab\_%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	src := lab(map[string]string{Complete: "UPDATE outbox_lab SET status = 'SENT' WHERE id = @id"})
	if _, err := Install(ctx, srv.ConnString(), mustParse(t, src)); err == nil {
		t.Fatal("Install succeeded")
	}
	if after := count(); after > before && srv.Owned() {
		t.Errorf("outboxlab_ schemas: %d before a failed Install, %d after", before, after)
	}
}

func TestInstallBuiltins(t *testing.T) {
	for _, name := range []string{"leased", "baseline"} {
		t.Run(name, func(t *testing.T) {
			ctx := testContext(t)
			p, err := Resolve(name)
			if err != nil {
				t.Fatal(err)
			}
			inst := mustInstall(t, p)
			st := inst.Statements
			if !strings.HasPrefix(st.Schema, "outboxlab_") || !st.HasGen {
				t.Errorf("Schema %q HasGen %v", st.Schema, st.HasGen)
			}
			for _, s := range []string{Claim, Complete, Retry, Enqueue, State, Expire, Due, Age} {
				if _, ok := st.Stmts[s]; !ok {
					t.Errorf("no statement %q", s)
				}
			}
			if s := p.Sections[Age]; s == nil || !s.Default {
				t.Errorf("age section %+v, want the default kept", s)
			}
			if _, ok := st.Stmts[Renew]; ok {
				t.Error("a renew statement without a renew section")
			}
			if s := p.Sections[State]; s == nil || !s.Default {
				t.Errorf("state section %+v, want the default filled in", s)
			}
			if err := inst.Reset(ctx, []string{"e1", "e2"}); err != nil {
				t.Fatal(err)
			}
			c, err := st.Claim(ctx, inst.Conn, "w1")
			if err != nil {
				t.Fatal(err)
			}
			if !c.Found || c.ID != "1" || c.Event != "e1" || c.Gen != 1 {
				t.Fatalf("claim = %+v, want id 1, e1, generation 1", c)
			}
			ok, err := st.Apply(ctx, inst.Conn, Complete, Args{ID: c.ID, Gen: c.Gen, Worker: "w1"})
			if err != nil || !ok {
				t.Fatalf("complete = %v, %v; want applied", ok, err)
			}
			rows, err := st.ReadState(ctx, inst.Conn)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 2 || rows[0].Status != model.Status("SENT") || rows[1].Status != model.Status("READY") {
				t.Errorf("state = %+v, want e1 SENT and e2 READY", rows)
			}
		})
	}
}

// ownProtocol has its own table, uuid ids, its own status names and its own
// enqueue, state, expire and due sections. Its enqueue has no semicolon and a
// trailing comment, as the format allows.
const ownProtocol = `-- A protocol on a table of its own, with uuid ids.
-- outboxlab: order=any

-- name: schema
CREATE TABLE jobs (
    seq bigint GENERATED ALWAYS AS IDENTITY,
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    event_id text NOT NULL UNIQUE,
    state text NOT NULL DEFAULT 'new' CHECK (state IN ('new', 'taken', 'done')),
    attempt bigint NOT NULL DEFAULT 0,
    taken_by text,
    held_until timestamptz,
    run_at timestamptz NOT NULL DEFAULT statement_timestamp()
);
CREATE INDEX jobs_seq ON jobs (seq);

-- name: claim
WITH c AS (
    SELECT id FROM jobs
    WHERE (state = 'new' AND run_at <= statement_timestamp())
       OR (state = 'taken' AND held_until <= statement_timestamp())
    ORDER BY seq
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
UPDATE jobs AS j
SET state = 'taken', attempt = j.attempt + 1, taken_by = @worker,
    held_until = statement_timestamp() + interval '30 seconds'
FROM c
WHERE j.id = c.id
RETURNING j.id, j.event_id, j.attempt AS generation

-- name: complete
UPDATE jobs SET state = 'done', held_until = NULL
WHERE id = @id AND state = 'taken' AND attempt = @generation
  AND held_until > clock_timestamp()
RETURNING id

-- name: retry
UPDATE jobs SET state = 'new', held_until = NULL,
    run_at = statement_timestamp() + interval '1 minute'
WHERE id = @id AND state = 'taken' AND attempt = @generation
  AND held_until > clock_timestamp()
RETURNING id

-- name: renew
UPDATE jobs SET held_until = statement_timestamp() + interval '30 seconds'
WHERE id = @id AND state = 'taken' AND attempt = @generation
  AND held_until > clock_timestamp()
RETURNING id

-- name: enqueue
INSERT INTO jobs (event_id) VALUES (@event_id)
-- (no semicolon: the format makes it optional)

-- name: state
SELECT id, event_id,
       CASE state WHEN 'new' THEN 'READY' WHEN 'taken' THEN 'INPROGRESS' ELSE 'SENT' END AS status,
       attempt AS generation,
       CASE WHEN held_until IS NULL THEN NULL
            ELSE held_until <= statement_timestamp() END AS lease_expired,
       run_at <= statement_timestamp() AS due
FROM jobs ORDER BY seq

-- name: expire
UPDATE jobs SET held_until = statement_timestamp() - interval '1 second'
WHERE id = @id AND state = 'taken'

-- name: due
UPDATE jobs SET run_at = statement_timestamp() - interval '1 second'
WHERE id = @id
`

func TestInstallOwnProtocol(t *testing.T) {
	ctx := testContext(t)
	p := mustParse(t, ownProtocol)
	if p.Order != model.Any {
		t.Errorf("Order = %q, want any", p.Order)
	}
	inst := mustInstall(t, p)
	st := inst.Statements
	if !st.HasGen {
		t.Error("HasGen = false; the claim returns a generation")
	}
	if got := st.Stmts[Claim].Params; len(got) != 1 || got[0] != "worker" {
		t.Errorf("claim params = %v, want [worker]", got)
	}
	if got := st.Stmts[Complete].Params; len(got) != 2 || got[0] != "id" || got[1] != "generation" {
		t.Errorf("complete params = %v, want [id generation]", got)
	}

	events := []string{"e3", "e1", "e2", "it's"}
	if err := inst.Reset(ctx, events); err != nil {
		t.Fatal(err)
	}
	rows, err := st.ReadState(ctx, inst.Conn)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(events) {
		t.Fatalf("state has %d rows, want %d: %+v", len(rows), len(events), rows)
	}
	for i, r := range rows {
		if r.Event != events[i] || r.Status != model.Status("READY") || r.Gen != 0 || !r.HasGen || r.LeaseHeld || !r.Due {
			t.Errorf("row %d = %+v, want %s READY, generation 0, no lease, due", i, r, events[i])
		}
		if len(r.ID) != 36 || strings.Count(r.ID, "-") != 4 {
			t.Errorf("row %d id %q is not a uuid", i, r.ID)
		}
	}

	// The ids from the state query go back into the statements as @id.
	c, err := st.Claim(ctx, inst.Conn, "w1")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Found || c.ID != rows[0].ID || c.Event != "e3" || c.Gen != 1 {
		t.Fatalf("claim = %+v, want %s e3 generation 1", c, rows[0].ID)
	}
	apply := func(section string, id string, gen int64) bool {
		t.Helper()
		ok, err := st.Apply(ctx, inst.Conn, section, Args{ID: id, Gen: gen, Worker: "w1"})
		if err != nil {
			t.Fatalf("%s(%s, %d): %v", section, id, gen, err)
		}
		return ok
	}
	if apply(Complete, rows[0].ID, 2) {
		t.Error("complete with a wrong generation applied")
	}
	if !apply(Renew, rows[0].ID, 1) {
		t.Error("renew did not apply")
	}
	if !apply(Complete, rows[0].ID, 1) {
		t.Error("complete did not apply")
	}
	if apply(Complete, rows[0].ID, 1) {
		t.Error("a second complete applied")
	}

	c, err = st.Claim(ctx, inst.Conn, "w2")
	if err != nil || c.ID != rows[1].ID {
		t.Fatalf("second claim = %+v, %v; want %s", c, err, rows[1].ID)
	}
	if err := st.Exec(ctx, inst.Conn, Expire, Args{ID: rows[1].ID}); err != nil {
		t.Fatal(err)
	}
	if apply(Retry, rows[1].ID, 1) {
		t.Error("retry after the lease expired applied")
	}
	c, err = st.Claim(ctx, inst.Conn, "w3")
	if err != nil || c.ID != rows[1].ID || c.Gen != 2 {
		t.Fatalf("reclaim of the expired row = %+v, %v; want %s generation 2", c, err, rows[1].ID)
	}
	if !apply(Retry, rows[1].ID, 2) {
		t.Error("retry of the current claim did not apply")
	}
	got, err := st.ReadState(ctx, inst.Conn)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Status != "SENT" || got[1].Status != "READY" || got[1].Due || got[1].Gen != 2 {
		t.Errorf("state after complete and retry = %+v", got)
	}
	if err := st.Exec(ctx, inst.Conn, Due, Args{ID: rows[1].ID}); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.ReadState(ctx, inst.Conn); !got[1].Due {
		t.Errorf("row after due = %+v, want due", got[1])
	}

	// Reset again: only the new events remain.
	if err := inst.Reset(ctx, []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if got, err := st.ReadState(ctx, inst.Conn); err != nil || len(got) != 1 || got[0].Event != "x" {
		t.Errorf("state after a second reset = %+v, %v", got, err)
	}
}

// countingConn counts the client's writes: one per round trip for a simple
// query.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// countWrites replaces the instance's checking connection by one whose
// writes are counted.
func countWrites(t *testing.T, inst *Instance) *atomic.Int64 {
	t.Helper()
	ctx := testContext(t)
	cfg, err := pgx.ParseConfig(inst.ConnString)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = inst.Statements.Schema
	writes := new(atomic.Int64)
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{c, writes}, nil
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	inst.Conn.Close(ctx)
	inst.Conn = conn
	return writes
}

func TestResetRewindsIdentityInOneRoundTrip(t *testing.T) {
	ctx := testContext(t)
	p, err := Resolve("leased")
	if err != nil {
		t.Fatal(err)
	}
	inst := mustInstall(t, p)
	writes := countWrites(t, inst)
	st := inst.Statements

	reset := func(events ...string) {
		t.Helper()
		before := writes.Load()
		if err := inst.Reset(ctx, events); err != nil {
			t.Fatal(err)
		}
		if n := writes.Load() - before; n != 1 {
			t.Errorf("Reset(%v) took %d round trips, want 1", events, n)
		}
		rows, err := st.ReadState(ctx, inst.Conn)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(events) {
			t.Fatalf("state after Reset(%v) = %+v", events, rows)
		}
		for i, r := range rows {
			if want := fmt.Sprint(i + 1); r.ID != want || r.Event != events[i] || r.Status != "READY" || r.Gen != 0 || r.LeaseHeld {
				t.Errorf("row %d after Reset(%v) = %+v, want id %s, %s READY generation 0", i, events, r, want, events[i])
			}
		}
	}
	reset("a", "b", "c")
	for range 2 {
		c, err := st.Claim(ctx, inst.Conn, "w1")
		if err != nil || !c.Found {
			t.Fatalf("claim: %+v, %v", c, err)
		}
	}
	reset("d", "e")       // the ids start at 1 again
	reset("d", "e")       // the same events again (a cached reset)
	reset()               // nothing
	reset("f", "g", "h")  // and again from 1
	reset("a", "b", "c")  // events seen before
	reset("quote'd", "x") // a value that needs quoting
	reset("a,b")          // not the same events as a, b
	reset("a", "b")
	reset()
	reset("") // not the same as no events
}

// TestResetErrorIsReported: a reset the server rejects (here a duplicate
// event against a UNIQUE column) fails at once with the server's error.
func TestResetErrorIsReported(t *testing.T) {
	ctx := testContext(t)
	p, err := Resolve("leased")
	if err != nil {
		t.Fatal(err)
	}
	inst := mustInstall(t, p)
	start := time.Now()
	err = inst.Reset(ctx, []string{"a", "a"})
	if err == nil || !IsServerError(err) || !strings.Contains(err.Error(), "23505") {
		t.Errorf("Reset of a duplicate event: %v, want the server's unique violation", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Reset took %v to fail", d)
	}
	if err := inst.Reset(ctx, []string{"a", "b"}); err != nil {
		t.Fatalf("Reset after a failed one: %v", err)
	}
	if rows, err := inst.Statements.ReadState(ctx, inst.Conn); err != nil || len(rows) != 2 || rows[0].ID != "1" {
		t.Errorf("state after Reset(a, b) = %+v, %v", rows, err)
	}
}

// TestResetWithForeignKey: when DELETE in table-name order breaks a foreign
// key, Reset falls back to TRUNCATE and still rewinds the ids.
func TestResetWithForeignKey(t *testing.T) {
	ctx := testContext(t)
	src := lab(map[string]string{Schema: labSchema + `
CREATE TABLE zz_log (
    n bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    row_id bigint NOT NULL REFERENCES outbox_lab (id)
);`})
	inst := mustInstall(t, mustParse(t, src))
	st := inst.Statements
	// Round 0 deletes; round 1 meets the foreign key and falls back to
	// TRUNCATE; round 2 repeats round 0's events, whose reset was cached
	// before the fallback.
	for round, events := range [][]string{{"a", "b"}, {"c", "d"}, {"a", "b"}} {
		if err := inst.Reset(ctx, events); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		rows, err := st.ReadState(ctx, inst.Conn)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 || rows[0].ID != "1" || rows[1].ID != "2" || rows[0].Event != events[0] {
			t.Fatalf("round %d: state %+v, want ids 1 and 2 for %v", round, rows, events)
		}
		if _, err := inst.Conn.Exec(ctx, "INSERT INTO zz_log (row_id) VALUES (1), (2)"); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := inst.Conn.QueryRow(ctx, "SELECT max(n) FROM zz_log").Scan(&n); err != nil || n != 2 {
		t.Errorf("zz_log ids: max %d, %v; want 2 (its identity rewound too)", n, err)
	}
}

func TestCloseDropsSchema(t *testing.T) {
	ctx := testContext(t)
	srv := server(t)
	p, err := Resolve("leased")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := Install(ctx, srv.ConnString(), p)
	if err != nil {
		t.Fatal(err)
	}
	schema := inst.Statements.Schema

	other, err := pgx.Connect(ctx, srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	exists := func() bool {
		var ok bool
		if err := other.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)", schema).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !exists() {
		t.Fatalf("schema %s does not exist after Install", schema)
	}
	var tables int
	if err := other.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = $1", schema).Scan(&tables); err != nil || tables != 1 {
		t.Errorf("tables in %s: %d, %v; want 1", schema, tables, err)
	}
	inst.Close()
	if exists() {
		t.Errorf("schema %s still exists after Close", schema)
	}
	if inst.Conn != nil {
		t.Error("Conn is not nil after Close")
	}
	inst.Close() // a second Close is harmless
}

// TestInstancesAreIsolated: two installs of the same protocol get schemas of
// their own.
func TestInstancesAreIsolated(t *testing.T) {
	ctx := testContext(t)
	a := mustInstall(t, mustParse(t, lab(nil)))
	b := mustInstall(t, mustParse(t, lab(nil)))
	if a.Statements.Schema == b.Statements.Schema {
		t.Fatalf("both in schema %s", a.Statements.Schema)
	}
	if err := a.Reset(ctx, []string{"a1", "a2"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Reset(ctx, []string{"b1"}); err != nil {
		t.Fatal(err)
	}
	ra, _ := a.Statements.ReadState(ctx, a.Conn)
	rb, _ := b.Statements.ReadState(ctx, b.Conn)
	if len(ra) != 2 || len(rb) != 1 || rb[0].Event != "b1" {
		t.Errorf("states %+v and %+v", ra, rb)
	}
}

// leaseDeadline reads one row's lease deadline with the given query ($1: the
// row's id); a row without a lease reads as the zero time.
func leaseDeadline(t *testing.T, inst *Instance, query, id string) time.Time {
	t.Helper()
	var at *time.Time
	if err := inst.Conn.QueryRow(testContext(t), query, id).Scan(&at); err != nil {
		t.Fatalf("lease deadline of %s: %v", id, err)
	}
	if at == nil {
		return time.Time{}
	}
	return *at
}

// ageBy runs the age fixture on a row and checks that its lease deadline
// moved back by exactly d (the server keeps microseconds).
func ageBy(t *testing.T, inst *Instance, query, id string, seconds float64, d time.Duration) {
	t.Helper()
	ctx := testContext(t)
	before := leaseDeadline(t, inst, query, id)
	if err := inst.Statements.Exec(ctx, inst.Conn, Age, Args{ID: id, Seconds: seconds, Worker: "harness"}); err != nil {
		t.Fatalf("age(%s, %v): %v", id, seconds, err)
	}
	after := leaseDeadline(t, inst, query, id)
	if got := before.Sub(after); got != d {
		t.Errorf("age(%s, %v) moved the deadline from %v to %v: by %v, want %v", id, seconds, before, after, got, d)
	}
}

// TestInstallDefaultAge: a protocol on the article's table keeps the
// default age fixture, which moves a claimed row's deadline back by exactly
// @seconds, fractions included, and leaves a row without a lease alone.
func TestInstallDefaultAge(t *testing.T) {
	ctx := testContext(t)
	p, err := Resolve("leased")
	if err != nil {
		t.Fatal(err)
	}
	inst := mustInstall(t, p)
	st := inst.Statements
	if !p.Has(Age) || !p.Sections[Age].Default {
		t.Fatalf("age section %+v, want the default", p.Sections[Age])
	}
	if got := st.Stmts[Age].Params; !reflect.DeepEqual(got, []string{"seconds", "id"}) {
		t.Errorf("age params = %v, want [seconds id]", got)
	}
	if err := inst.Reset(ctx, []string{"e1", "e2"}); err != nil {
		t.Fatal(err)
	}
	if c, err := st.Claim(ctx, inst.Conn, "w1"); err != nil || c.ID != "1" {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	const deadline = "SELECT lease_until FROM outbox_lab WHERE id = $1"
	ageBy(t, inst, deadline, "1", 1.5, 1500*time.Millisecond)
	ageBy(t, inst, deadline, "1", 0.25, 250*time.Millisecond)
	ageBy(t, inst, deadline, "1", 0.000001, time.Microsecond)
	ageBy(t, inst, deadline, "1", 3, 3*time.Second)
	ageBy(t, inst, deadline, "2", 10, 0) // READY: no lease to age
	rows, err := st.ReadState(ctx, inst.Conn)
	if err != nil {
		t.Fatal(err)
	}
	if !rows[0].LeaseHeld || rows[0].LeaseExpired {
		t.Fatalf("row 1 after 4.75s of age = %+v, want its 30s lease still live", rows[0])
	}
	// Aged past its lease, the row is expired and claimable again.
	ageBy(t, inst, deadline, "1", 26, 26*time.Second)
	if rows, _ := st.ReadState(ctx, inst.Conn); !rows[0].LeaseExpired {
		t.Errorf("row 1 after 30.75s of age = %+v, want its lease expired", rows[0])
	}
	if c, err := st.Claim(ctx, inst.Conn, "w2"); err != nil || c.ID != "1" || c.Gen != 2 {
		t.Errorf("claim after the lease aged out = %+v, %v; want row 1 generation 2", c, err)
	}
}

// TestInstallDropsDefaultAge: a protocol on a table of its own without an
// age section installs; the default age, which names outbox_lab, is dropped
// rather than failing the install.
func TestInstallDropsDefaultAge(t *testing.T) {
	p, err := Resolve("../testdata/correct/jobs_uuid.sql")
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Sections[Age]; s == nil || !s.Default {
		t.Fatalf("after Parse, age section %+v: want the tentative default", s)
	}
	inst := mustInstall(t, p)
	if p.Has(Age) {
		t.Errorf("Has(age) after Install; want the default dropped: %+v", p.Sections[Age])
	}
	if _, ok := inst.Statements.Stmts[Age]; ok {
		t.Error("an age statement was kept")
	}
	for _, s := range []string{Claim, Complete, Retry, Enqueue, State, Expire, Due} {
		if _, ok := inst.Statements.Stmts[s]; !ok {
			t.Errorf("no statement %q", s)
		}
	}
	err = inst.Statements.Exec(testContext(t), inst.Conn, Age, Args{ID: "x", Seconds: 1})
	if err == nil || !strings.Contains(err.Error(), "no age section") {
		t.Errorf("Exec(age) = %v, want an error saying there is no age section", err)
	}
}

func TestInstallOwnAge(t *testing.T) {
	ctx := testContext(t)
	src := ownProtocol + `
-- name: age
UPDATE jobs SET held_until = held_until - make_interval(secs => @seconds)
WHERE id = @id AND state = 'taken' AND @worker <> ''
`
	p := mustParse(t, src)
	inst := mustInstall(t, p)
	if s := p.Sections[Age]; s == nil || s.Default || s.Line != lineOf(t, src, "-- name: age") {
		t.Fatalf("age section %+v, want the file's own", s)
	}
	if got := inst.Statements.Stmts[Age].Params; !reflect.DeepEqual(got, []string{"seconds", "id", "worker"}) {
		t.Errorf("age params = %v, want [seconds id worker]", got)
	}
	if err := inst.Reset(ctx, []string{"e1"}); err != nil {
		t.Fatal(err)
	}
	c, err := inst.Statements.Claim(ctx, inst.Conn, "w1")
	if err != nil || !c.Found {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	const deadline = "SELECT held_until FROM jobs WHERE id = $1"
	ageBy(t, inst, deadline, c.ID, 2.5, 2500*time.Millisecond)
	ageBy(t, inst, deadline, c.ID, 0.125, 125*time.Millisecond)
}
