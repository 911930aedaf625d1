package sut

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The fence directive (format version 3): fence=token makes a claim's
// generation an opaque token, read as text and bound back as text. Text
// level first, then against the server with the protocols of
// testdata/fence: a bigint, a uuid and a text token.

func TestParseFence(t *testing.T) {
	tests := []struct {
		directives string
		want       Fence
		name       string
	}{
		{"", FenceCounter, "counter"},
		{"-- outboxlab: fence=counter\n", FenceCounter, "counter"},
		{"-- outboxlab: fence=token\n", FenceToken, "token"},
		{"-- outboxlab: fence = token\n-- outboxlab: batch=2\n", FenceToken, "token"},
	}
	for _, tt := range tests {
		p := mustParse(t, tt.directives+body)
		if p.Fence != tt.want || p.Fence.String() != tt.name {
			t.Errorf("%q: Fence %v (%q), want %v (%q)", tt.directives, p.Fence, p.Fence.String(), tt.want, tt.name)
		}
	}
}

func TestParseFenceErrors(t *testing.T) {
	for _, value := range []string{"tokens", "", "Token", "uuid", "counter,token"} {
		_, err := Parse("x", "dir/x.sql", "-- a comment\n-- outboxlab: order=fifo\n-- outboxlab: fence="+value+"\n"+body)
		want := "fence=" + value + ": want fence=counter or fence=token"
		var perr *Error
		if !errors.As(err, &perr) || perr.File != "dir/x.sql" || perr.Line != 3 || perr.Msg != want {
			t.Errorf("fence=%q: %v\nwant dir/x.sql:3: %s", value, err, want)
		}
	}
}

// tokenFile is one of testdata/fence's protocols, as text.
func tokenFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "fence", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tokenKinds are testdata/fence's protocols: the first claim's token, as
// a pattern over its text, and a token of the same type that no claim
// handed out (a wrong one, still valid input for the column's type).
var tokenKinds = []struct {
	file  string
	first *regexp.Regexp
	wrong string
}{
	{"token_bigint.sql", regexp.MustCompile(`^1000$`), "1007"},
	{"token_uuid.sql", regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`), "00000000-0000-4000-8000-000000000000"},
	{"token_text.sql", regexp.MustCompile("^tok\t1000\n~end$"), "tok\t1007\n~end"},
}

func TestInstallFenceErrors(t *testing.T) {
	uuidSchema := strings.Replace(labSchema, "generation bigint NOT NULL DEFAULT 0", "generation uuid", 1)
	uuidClaim := strings.Replace(labClaim, "generation = o.generation + 1", "generation = gen_random_uuid()", 1)
	tests := []struct {
		name       string
		directives string
		override   map[string]string
		marker     string
		msg        string // the whole message
	}{
		{"counter with a uuid generation", "",
			map[string]string{Schema: uuidSchema, Claim: uuidClaim},
			"-- name: claim",
			`section "claim": column "generation" must be bigint under the default fence=counter; a uuid or text generation is an opaque token: add "-- outboxlab: fence=token"`},
		{"counter with a text generation", "",
			map[string]string{Claim: strings.Replace(labClaim, "o.generation;", "o.generation::text AS generation;", 1)},
			"-- name: claim",
			`section "claim": column "generation" must be bigint under the default fence=counter; a uuid or text generation is an opaque token: add "-- outboxlab: fence=token"`},
		{"counter with a uuid generation in state", "",
			map[string]string{State: "SELECT id, event_id, status, gen_random_uuid() AS generation, NULL::boolean AS lease_expired, true AS due FROM outbox_lab"},
			"-- name: state",
			`section "state": column "generation" must be bigint under the default fence=counter; a uuid or text generation is an opaque token: add "-- outboxlab: fence=token"`},
		{"token without a generation", "-- outboxlab: fence=token\n",
			map[string]string{Claim: labClaimNoGen},
			"-- name: claim",
			`section "claim" returns no generation: with fence=token the claim must return its token as a column generation (bigint, uuid or text)`},
		{"token of a type it may not have", "-- outboxlab: fence=token\n",
			map[string]string{Claim: strings.Replace(labClaim, "o.generation;", "now() AS generation;", 1)},
			"-- name: claim",
			`section "claim": column "generation" must be bigint, uuid or text (fence=token)`},
		{"token whose state has no generation", "-- outboxlab: fence=token\n",
			map[string]string{Schema: uuidSchema, Claim: uuidClaim,
				State: "SELECT id, event_id, status, NULL::boolean AS lease_expired, true AS due FROM outbox_lab"},
			"-- name: state",
			`section "state": missing result column(s) generation (it returns: due, event_id, id, lease_expired, status)`},
		{"token whose state generation is boolean", "-- outboxlab: fence=token\n",
			map[string]string{Schema: uuidSchema, Claim: uuidClaim,
				State: "SELECT id, event_id, status, generation IS NULL AS generation, NULL::boolean AS lease_expired, true AS due FROM outbox_lab"},
			"-- name: state",
			`section "state": column "generation" must be bigint, uuid or text (fence=token)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.directives + lab(tt.override)
			inst, err := Install(testContext(t), server(t).ConnString(), mustParse(t, src))
			if err == nil {
				inst.Close()
				t.Fatalf("Install succeeded; want %s", tt.msg)
			}
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("error %v (%T) is not a *sut.Error", err, err)
			}
			if want := lineOf(t, src, tt.marker); perr.File != "test.sql" || perr.Line != want || perr.Msg != tt.msg {
				t.Errorf("%v\nwant test.sql:%d: %s", err, want, tt.msg)
			}
		})
	}
}

// TestTokenInstall: a token protocol of each type installs with Token and
// HasGen set, and the counter files it was made from keep Token unset.
func TestTokenInstall(t *testing.T) {
	for _, k := range tokenKinds {
		t.Run(k.file, func(t *testing.T) {
			inst := mustInstall(t, mustParse(t, tokenFile(t, k.file)))
			if st := inst.Statements; !st.Token || !st.HasGen {
				t.Errorf("Token %v HasGen %v, want both", st.Token, st.HasGen)
			}
		})
	}
	if st := mustInstall(t, mustParse(t, lab(nil))).Statements; st.Token || !st.HasGen {
		t.Errorf("counter protocol: Token %v HasGen %v, want false, true", st.Token, st.HasGen)
	}
}

// TestTokenRoundTrip: for a bigint, a uuid and a text token, the state
// reads NULL tokens before the first claim, a claim returns its token as
// text, the state reads the same text, and complete, retry and renew bound
// from Args.Token apply for that token and not for another.
func TestTokenRoundTrip(t *testing.T) {
	for _, k := range tokenKinds {
		t.Run(k.file, func(t *testing.T) {
			ctx := testContext(t)
			inst := mustInstall(t, mustParse(t, tokenFile(t, k.file)))
			st := inst.Statements
			if err := inst.Reset(ctx, []string{"e1", "e2"}); err != nil {
				t.Fatal(err)
			}
			rows, err := st.ReadState(ctx, inst.Conn)
			if err != nil || len(rows) != 2 {
				t.Fatalf("state before any claim: %+v, %v", rows, err)
			}
			for _, r := range rows {
				if r.Token != "" || r.Gen != 0 || r.HasGen {
					t.Errorf("before any claim %s: Token %q Gen %d HasGen %v, want a NULL token read as \"\"", r.Event, r.Token, r.Gen, r.HasGen)
				}
			}

			c, err := st.Claim(ctx, inst.Conn, "w1")
			if err != nil || !c.Found || c.Event != "e1" {
				t.Fatalf("claim = %+v, %v; want e1", c, err)
			}
			if !k.first.MatchString(c.Token) || c.Gen != 0 {
				t.Fatalf("claim's Token %q Gen %d, want a token matching %s and Gen 0", c.Token, c.Gen, k.first)
			}
			rows, err = st.ReadState(ctx, inst.Conn)
			if err != nil {
				t.Fatal(err)
			}
			if r := rows[0]; r.Token != c.Token || r.Gen != 0 || r.HasGen || r.Status != "INPROGRESS" {
				t.Errorf("state of e1 after the claim: %+v, want Token %q, Gen 0, HasGen false", r, c.Token)
			}
			if r := rows[1]; r.Token != "" {
				t.Errorf("state of e2, never claimed: Token %q, want \"\"", r.Token)
			}

			apply := func(section, token string) bool {
				t.Helper()
				ok, err := st.Apply(ctx, inst.Conn, section, Args{ID: c.ID, Token: token, Worker: "w1"})
				if err != nil {
					t.Fatalf("%s with token %q: %v", section, token, err)
				}
				return ok
			}
			for _, section := range []string{Renew, Retry, Complete} {
				if apply(section, k.wrong) {
					t.Errorf("%s with the wrong token %q applied", section, k.wrong)
				}
			}
			if !apply(Renew, c.Token) {
				t.Errorf("renew with the claim's token %q was refused", c.Token)
			}
			if !apply(Complete, c.Token) {
				t.Errorf("complete with the claim's token %q was refused", c.Token)
			}
			if got := statuses(t, inst); got != "e1:SENT e2:READY" {
				t.Errorf("after the complete: %s", got)
			}
		})
	}
}

// TestTokenBindsInSplitSections: a complete of two statements binds the
// token in both, whether it runs whole (one transaction of its own) or is
// split after its first statement (ApplyFirst, ApplyRest).
func TestTokenBindsInSplitSections(t *testing.T) {
	// The first statement fails unless its @generation is the row's token,
	// so a token bound wrongly there is seen too. (Install runs it with
	// NULL parameters, which it lets pass.)
	const check = "SELECT CASE WHEN @id::bigint IS NULL THEN 1\n" +
		"  ELSE 1 / (SELECT count(*)::int FROM outbox_lab WHERE id = @id::bigint AND generation = @generation) END;\n"
	for _, k := range tokenKinds {
		t.Run(k.file, func(t *testing.T) {
			ctx := testContext(t)
			src := tokenFile(t, k.file)
			src = strings.Replace(src, "-- name: complete\n", "-- name: complete\n"+check, 1)
			inst := mustInstall(t, mustParse(t, src))
			st := inst.Statements
			if n := st.StatementCount(Complete); n != 2 {
				t.Fatalf("complete holds %d statements, want 2", n)
			}
			if err := inst.Reset(ctx, []string{"e1", "e2"}); err != nil {
				t.Fatal(err)
			}
			c1, err := st.Claim(ctx, inst.Conn, "w1")
			if err != nil {
				t.Fatal(err)
			}
			c2, err := st.Claim(ctx, inst.Conn, "w1")
			if err != nil {
				t.Fatal(err)
			}

			// Whole: a wrong token fails in the first statement.
			if _, err := st.Apply(ctx, inst.Conn, Complete, Args{ID: c1.ID, Token: k.wrong}); !IsServerError(err) {
				t.Errorf("complete with the wrong token: %v, want the first statement's division by zero", err)
			}
			if ok, err := st.Apply(ctx, inst.Conn, Complete, Args{ID: c1.ID, Token: c1.Token}); err != nil || !ok {
				t.Errorf("complete with the claim's token = %v, %v; want applied", ok, err)
			}

			// Split after the first statement, the token bound in each part.
			tx, err := inst.Conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			a := Args{ID: c2.ID, Token: c2.Token}
			if err := st.ApplyFirst(ctx, tx, Complete, a, 1); err != nil {
				t.Fatalf("ApplyFirst with the claim's token: %v", err)
			}
			if ok, err := st.ApplyRest(ctx, tx, Complete, a, 1); err != nil || !ok {
				t.Fatalf("ApplyRest with the claim's token = %v, %v; want applied", ok, err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if got := statuses(t, inst); got != "e1:SENT e2:SENT" {
				t.Errorf("after both completes: %s", got)
			}
		})
	}
}

// TestTokenSplitRefusesAWrongToken: ApplyRest with a token other than the
// claim's is refused, ApplyFirst's statements having bound the same one.
func TestTokenSplitRefusesAWrongToken(t *testing.T) {
	const lock = "SELECT id FROM outbox_lab WHERE id = @id::bigint AND @generation::text IS NOT NULL FOR UPDATE;\n"
	for _, k := range tokenKinds {
		t.Run(k.file, func(t *testing.T) {
			ctx := testContext(t)
			src := strings.Replace(tokenFile(t, k.file), "-- name: complete\n", "-- name: complete\n"+lock, 1)
			inst := mustInstall(t, mustParse(t, src))
			st := inst.Statements
			if err := inst.Reset(ctx, []string{"e1"}); err != nil {
				t.Fatal(err)
			}
			c, err := st.Claim(ctx, inst.Conn, "w1")
			if err != nil {
				t.Fatal(err)
			}
			tx, err := inst.Conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			a := Args{ID: c.ID, Token: k.wrong}
			if err := st.ApplyFirst(ctx, tx, Complete, a, 1); err != nil {
				t.Fatalf("ApplyFirst: %v", err)
			}
			if ok, err := st.ApplyRest(ctx, tx, Complete, a, 1); err != nil || ok {
				t.Errorf("ApplyRest with the wrong token = %v, %v; want refused", ok, err)
			}
		})
	}
}

// TestTokenNullFromAClaim: a claim that returns a NULL token is the
// protocol's failure, as a NULL counter is.
func TestTokenNullFromAClaim(t *testing.T) {
	src := strings.Replace(tokenFile(t, "token_uuid.sql"), "generation = gen_random_uuid()", "generation = NULL", 1)
	inst := mustInstall(t, mustParse(t, src))
	ctx := testContext(t)
	if err := inst.Reset(ctx, []string{"e1"}); err != nil {
		t.Fatal(err)
	}
	_, err := inst.Statements.Claim(ctx, inst.Conn, "w1")
	var pe *ProtocolError
	if !errors.As(err, &pe) || pe.Msg != "claim returned a NULL generation" {
		t.Errorf("claim = %v, want the protocol error %q", err, "claim returned a NULL generation")
	}
}

// TestCounterIgnoresToken: under fence=counter @generation is still Gen,
// whatever Token holds.
func TestCounterIgnoresToken(t *testing.T) {
	inst := installed(t, "", nil)
	ctx := testContext(t)
	c, err := inst.Statements.Claim(ctx, inst.Conn, "w1")
	if err != nil || c.Gen != 1 || c.Token != "" {
		t.Fatalf("claim = %+v, %v; want generation 1 and no token", c, err)
	}
	ok, err := inst.Statements.Apply(ctx, inst.Conn, Complete, Args{ID: c.ID, Gen: c.Gen, Token: "2"})
	if err != nil || !ok {
		t.Errorf("complete = %v, %v; want applied by Gen", ok, err)
	}
}
