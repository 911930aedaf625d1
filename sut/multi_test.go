package sut

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// Server-level tests of the format's second version: sections of several
// statements, batch claims and the rescue section.

// pickedClaim claims up to LIMIT rows through a temp table, the shape of
// libraries that lock first and update after. The worker's name goes into
// the first statement, so parameters are tested in a Prelude too.
func pickedClaim(limit string) string {
	return `CREATE TEMP TABLE picked ON COMMIT DROP AS
    SELECT id, @worker::text AS by FROM outbox_lab
    WHERE (status = 'READY' AND next_attempt_at <= statement_timestamp())
       OR (status = 'INPROGRESS' AND lease_until <= statement_timestamp())
    ORDER BY id
    LIMIT ` + limit + `
    FOR UPDATE SKIP LOCKED;
-- then take what was picked:
UPDATE outbox_lab AS o
SET status = 'INPROGRESS', generation = o.generation + 1,
    lease_until = statement_timestamp() + interval '30 seconds'
FROM picked AS p
WHERE o.id = p.id
RETURNING o.id, o.event_id, o.generation;`
}

// completeByTable reports its outcome through an applied column of its
// last statement, the rows having passed through a temp table.
const completeByTable = `CREATE TEMP TABLE done (id bigint) ON COMMIT DROP;
WITH u AS (
    UPDATE outbox_lab SET status = 'SENT', lease_until = NULL
    WHERE id = @id AND status = 'INPROGRESS' AND generation = @generation
      AND lease_until > clock_timestamp()
    RETURNING id
)
INSERT INTO done SELECT id FROM u;
SELECT count(*) > 0 AS applied FROM done;`

const labRescue = `UPDATE outbox_lab
SET status = 'READY', lease_until = NULL, next_attempt_at = statement_timestamp()
WHERE status = 'INPROGRESS' AND lease_until <= statement_timestamp() AND @worker <> '';
SELECT count(*) FROM outbox_lab;`

// installed installs the article's protocol with sections replaced, after
// the given directives.
func installed(t *testing.T, directives string, override map[string]string) *Instance {
	t.Helper()
	inst := mustInstall(t, mustParse(t, directives+lab(override)))
	if err := inst.Reset(testContext(t), []string{"e1", "e2", "e3", "e4"}); err != nil {
		t.Fatal(err)
	}
	return inst
}

// statuses reads the state query over a connection of its own, so it sees
// only what was committed.
func statuses(t *testing.T, inst *Instance) string {
	t.Helper()
	ctx := testContext(t)
	conn, err := Connect(ctx, inst.ConnString, inst.Statements.Schema)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := inst.Statements.ReadState(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, r.Event+":"+string(r.Status))
	}
	return strings.Join(out, " ")
}

func events(rows []ClaimResult) string {
	var out []string
	for _, r := range rows {
		if !r.Found {
			out = append(out, "not-found")
		}
		out = append(out, r.Event)
	}
	return strings.Join(out, " ")
}

func TestInstallMultiStatementClaim(t *testing.T) {
	inst := installed(t, "-- outboxlab: batch=2\n", map[string]string{Claim: pickedClaim("2"), Complete: completeByTable})
	st := inst.Statements.Stmts[Claim]
	if len(st.Prelude) != 1 || !strings.HasPrefix(st.Prelude[0].SQL, "CREATE TEMP TABLE picked") ||
		!reflect.DeepEqual(st.Prelude[0].Params, []string{"worker"}) {
		t.Errorf("claim Prelude = %+v, want the CREATE TEMP TABLE with [worker]", st.Prelude)
	}
	if !strings.HasPrefix(st.SQL, "\n-- then take what was picked:\nUPDATE outbox_lab") || st.Params != nil {
		t.Errorf("claim SQL = %q, Params %v; want the UPDATE, without parameters", st.SQL, st.Params)
	}
	if !inst.Statements.HasGen || inst.Statements.Batch != 2 {
		t.Errorf("HasGen %v Batch %d, want true 2", inst.Statements.HasGen, inst.Statements.Batch)
	}
	if n := len(inst.Statements.Stmts[Complete].Prelude); n != 2 {
		t.Errorf("complete has %d prelude statements, want 2", n)
	}
	// A single-statement section is as it always was.
	if got, want := inst.Statements.Stmts[Retry], (Stmt{SQL: strings.TrimSuffix(strings.ReplaceAll(strings.ReplaceAll(labRetry, "@id", "$1"), "@generation", "$2"), ";"), Params: []string{"id", "generation"}}); !reflect.DeepEqual(got, want) {
		t.Errorf("retry = %+v, want %+v", got, want)
	}
}

// TestMultiStatementClaimCommits: on a bare connection a claim of several
// statements is a transaction of its own, committed; the temp table went
// with it, so the next claim can make it again.
func TestMultiStatementClaimCommits(t *testing.T) {
	ctx := testContext(t)
	inst := installed(t, "-- outboxlab: batch=2\n", map[string]string{Claim: pickedClaim("2"), Complete: completeByTable})
	st := inst.Statements
	rows, err := st.ClaimRows(ctx, inst.Conn, "w1")
	if err != nil || events(rows) != "e1 e2" {
		t.Fatalf("ClaimRows = %+v, %v; want e1 e2", rows, err)
	}
	if s := inst.Conn.PgConn().TxStatus(); s != 'I' {
		t.Errorf("transaction status %q after the claim, want idle", s)
	}
	if got := statuses(t, inst); got != "e1:INPROGRESS e2:INPROGRESS e3:READY e4:READY" {
		t.Errorf("committed state %s", got)
	}
	rows, err = st.ClaimRows(ctx, inst.Conn, "w2")
	if err != nil || events(rows) != "e3 e4" || rows[0].Gen != 1 {
		t.Fatalf("second ClaimRows = %+v, %v; want e3 e4 generation 1", rows, err)
	}
	if rows, err := st.ClaimRows(ctx, inst.Conn, "w3"); err != nil || rows == nil || len(rows) != 0 {
		t.Errorf("ClaimRows with nothing claimable = %#v, %v; want an empty slice", rows, err)
	}
	if c, err := st.Claim(ctx, inst.Conn, "w3"); err != nil || c.Found {
		t.Errorf("Claim with nothing claimable = %+v, %v; want not found", c, err)
	}
	// The complete of several statements reports through its last.
	for _, tt := range []struct {
		gen  int64
		want bool
	}{{2, false}, {1, true}, {1, false}} {
		ok, err := st.Apply(ctx, inst.Conn, Complete, Args{ID: rows[0].ID, Gen: tt.gen, Worker: "w2"})
		if err != nil || ok != tt.want {
			t.Errorf("complete(generation %d) = %v, %v; want %v", tt.gen, ok, err, tt.want)
		}
	}
	if got := statuses(t, inst); got != "e1:INPROGRESS e2:INPROGRESS e3:SENT e4:INPROGRESS" {
		t.Errorf("committed state after complete: %s", got)
	}
}

// TestMultiStatementClaimInTransaction: inside an open transaction the
// statements run in it and it stays open; its rollback undoes them all.
func TestMultiStatementClaimInTransaction(t *testing.T) {
	ctx := testContext(t)
	inst := installed(t, "-- outboxlab: batch=2\n", map[string]string{Claim: pickedClaim("2")})
	tx, err := inst.Conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := inst.Statements.ClaimRows(ctx, tx, "w1")
	if err != nil || events(rows) != "e1 e2" {
		t.Fatalf("ClaimRows in a transaction = %+v, %v; want e1 e2", rows, err)
	}
	if s := inst.Conn.PgConn().TxStatus(); s != 'T' {
		t.Errorf("transaction status %q after the claim, want still in the transaction", s)
	}
	if got := statuses(t, inst); got != "e1:READY e2:READY e3:READY e4:READY" {
		t.Errorf("state seen from outside the open transaction: %s", got)
	}
	var picked int
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM picked").Scan(&picked); err != nil || picked != 2 {
		t.Errorf("temp table inside the transaction: %d rows, %v; want 2", picked, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := inst.Statements.Claim(ctx, inst.Conn, "w2"); err != nil || c.Event != "e1" || c.Gen != 1 {
		t.Errorf("claim after the rollback = %+v, %v; want e1 generation 1 again", c, err)
	}
}

func TestBatchClaims(t *testing.T) {
	ctx := testContext(t)
	single := strings.Replace(labClaim, "LIMIT 1", "LIMIT 3", 1)
	dup := strings.Replace(labClaim, "RETURNING o.id, o.event_id, o.generation;",
		"RETURNING o.id, o.event_id, o.generation\n", 1)
	dup = "WITH c AS (" + dup + ") SELECT * FROM c UNION ALL SELECT * FROM c"
	tests := []struct {
		name, directives, claim string
		events                  string // or the error's exact text
		err                     string
	}{
		{"batch=3, three rows", "-- outboxlab: batch=3\n", single, "e1 e2 e3", ""},
		{"batch=16, three rows", "-- outboxlab: batch=16\n", single, "e1 e2 e3", ""},
		{"batch=3 of several statements", "-- outboxlab: batch=3\n", pickedClaim("3"), "e1 e2 e3", ""},
		{"batch=2, three rows", "-- outboxlab: batch=2\n", single, "", "claim returned 3 rows, more than batch=2"},
		{"batch=1, three rows", "", single, "", "claim returned 3 rows"},
		{"batch=1, two rows of several statements", "", pickedClaim("2"), "", "claim returned 2 rows"},
		{"an event twice", "-- outboxlab: batch=4\n", dup, "", "claim returned event e1 twice"},
		{"an event twice, batch=1", "", dup, "", "claim returned 2 rows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst := installed(t, tt.directives, map[string]string{Claim: tt.claim})
			rows, err := inst.Statements.ClaimRows(ctx, inst.Conn, "w1")
			// A claim of one statement took its rows for good.
			if err := inst.Reset(ctx, []string{"e1", "e2", "e3", "e4"}); err != nil {
				t.Fatal(err)
			}
			c, cerr := inst.Statements.Claim(ctx, inst.Conn, "w1")
			if tt.err == "" {
				if err != nil || events(rows) != tt.events {
					t.Errorf("ClaimRows = %+v, %v; want %s", rows, err, tt.events)
				}
				return
			}
			var pe *ProtocolError
			if !errors.As(err, &pe) || pe.Msg != tt.err || rows != nil {
				t.Errorf("ClaimRows = %+v, %v; want the protocol error %q", rows, err, tt.err)
			}
			// Claim says the same.
			if !errors.As(cerr, &pe) || pe.Msg != tt.err || c.Found {
				t.Errorf("Claim = %+v, %v; want the protocol error %q", c, cerr, tt.err)
			}
		})
	}
}

// TestRefusedClaimRollsBack: a claim of several statements whose result the
// suite refuses takes nothing: its transaction is rolled back.
func TestRefusedClaimRollsBack(t *testing.T) {
	ctx := testContext(t)
	inst := installed(t, "", map[string]string{Claim: pickedClaim("2")})
	if _, err := inst.Statements.ClaimRows(ctx, inst.Conn, "w1"); !IsProtocolError(err) {
		t.Fatalf("ClaimRows = %v, want a protocol error", err)
	}
	if s := inst.Conn.PgConn().TxStatus(); s != 'I' {
		t.Errorf("transaction status %q after the refused claim, want idle", s)
	}
	if got := statuses(t, inst); got != "e1:READY e2:READY e3:READY e4:READY" {
		t.Errorf("state after the refused claim: %s", got)
	}
}

func TestRescue(t *testing.T) {
	ctx := testContext(t)
	for _, rescue := range []string{labRescue, strings.SplitAfter(labRescue, ";")[0]} {
		inst := installed(t, "", map[string]string{Rescue: rescue})
		st := inst.Statements
		if !inst.Proto.Policy().Rescue {
			t.Error("Policy().Rescue = false")
		}
		if n := strings.Count(rescue, ";"); len(st.Stmts[Rescue].Prelude) != n-1 {
			t.Errorf("rescue of %d statements has Prelude %+v", n, st.Stmts[Rescue].Prelude)
		}
		for _, w := range []string{"w1", "w2"} {
			if c, err := st.Claim(ctx, inst.Conn, w); err != nil || !c.Found {
				t.Fatalf("claim: %+v, %v", c, err)
			}
		}
		if err := st.Exec(ctx, inst.Conn, Expire, Args{ID: "1"}); err != nil {
			t.Fatal(err)
		}
		if err := st.Rescue(ctx, inst.Conn, "rescuer"); err != nil {
			t.Fatalf("Rescue: %v", err)
		}
		// Only the expired claim went back; the live one is left alone.
		if got := statuses(t, inst); got != "e1:READY e2:INPROGRESS e3:READY e4:READY" {
			t.Errorf("state after the rescue: %s", got)
		}
	}
	inst := installed(t, "", nil)
	if err := inst.Statements.Rescue(ctx, inst.Conn, "rescuer"); err == nil || !strings.Contains(err.Error(), "no rescue section") {
		t.Errorf("Rescue without a section = %v, want an error saying there is none", err)
	}
}

// TestSingleStatementInOneRoundTrip: a section of one statement runs as it
// always did, with no transaction of its own around it.
func TestSingleStatementInOneRoundTrip(t *testing.T) {
	ctx := testContext(t)
	inst := installed(t, "", nil)
	writes := countWrites(t, inst)
	st := inst.Statements
	for _, w := range []string{"w1", "w2", "w3"} {
		before := writes.Load()
		if _, err := st.ClaimRows(ctx, inst.Conn, w); err != nil {
			t.Fatal(err)
		}
		// The first claim prepares the statement in pgx's cache.
		if n := writes.Load() - before; w != "w1" && n != 1 {
			t.Errorf("claim as %s took %d round trips, want 1", w, n)
		}
	}
	for gen := range 3 {
		before := writes.Load()
		if _, err := st.Apply(ctx, inst.Conn, Complete, Args{ID: "1", Gen: int64(gen)}); err != nil {
			t.Fatal(err)
		}
		if n := writes.Load() - before; gen > 0 && n != 1 {
			t.Errorf("complete took %d round trips, want 1", n)
		}
	}
}

// notBeginner is a Querier that cannot open a transaction.
type notBeginner struct{ Querier }

func TestMultiStatementNeedsATransaction(t *testing.T) {
	inst := installed(t, "-- outboxlab: batch=2\n", map[string]string{Claim: pickedClaim("2")})
	_, err := inst.Statements.ClaimRows(testContext(t), notBeginner{inst.Conn}, "w1")
	if err == nil || !strings.Contains(err.Error(), "needs a connection that can begin a transaction") {
		t.Errorf("ClaimRows on a Querier without Begin = %v", err)
	}
}
