package sut

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/outboxlab/outboxlab/model"
)

// Text-level tests of the protocol file format (docs/protocol-format.md, "Shape of a file"
// and "Errors"): no server is involved.

// okText is the smallest valid protocol for text-level tests; the SQL need not
// run, only parse as text. Its lines:
//
//	1 directive, 2 schema header, 3 DDL, 4 claim header, 5 claim,
//	6 complete header, 7 complete, 8 retry header, 9 retry.
const okText = `-- outboxlab: order=fifo
-- name: schema
CREATE TABLE t (id int);
-- name: claim
SELECT 1 AS id, 'e' AS event_id;
-- name: complete
UPDATE t SET id = id WHERE id = @id AND @generation > 0 RETURNING id;
-- name: retry
UPDATE t SET id = id WHERE id = @id AND @generation > 0 RETURNING id;
`

// The four required sections, each as header plus one statement.
const (
	schemaPart   = "-- name: schema\nCREATE TABLE t (id int);\n"
	claimPart    = "-- name: claim\nSELECT 1 AS id, 'e' AS event_id;\n"
	completePart = "-- name: complete\nUPDATE t SET id = id WHERE id = @id AND @generation > 0 RETURNING id;\n"
	retryPart    = "-- name: retry\nUPDATE t SET id = id WHERE id = @id AND @generation > 0 RETURNING id;\n"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		line  int
		words []string
	}{
		// Missing required sections: reported at the end of the file.
		{"missing schema", claimPart + completePart + retryPart, 6,
			[]string{"missing required section", `"schema"`}},
		{"missing claim", schemaPart + completePart + retryPart, 6,
			[]string{"missing required section", `"claim"`}},
		{"missing complete", schemaPart + claimPart + retryPart, 6,
			[]string{"missing required section", `"complete"`}},
		{"missing retry", schemaPart + claimPart + completePart, 6,
			[]string{"missing required section", `"retry"`}},
		{"no sections at all", "-- just a comment\n-- and another\n", 2,
			[]string{"missing required section", `"schema"`}},
		// An empty file is reported at line 1: there is no line 0.
		{"empty file", "", 1,
			[]string{"empty protocol file", "schema, claim, complete, retry"}},
		{"a single newline", "\n", 1,
			[]string{"empty protocol file"}},
		{"blank lines only", "\n\n  \n\t\r\n\n", 1,
			[]string{"empty protocol file"}},
		{"blank lines without a final newline", "\n\n   ", 1,
			[]string{"empty protocol file"}},

		// A line too long to read: the line that is.
		{"first line too long", strings.Repeat("x", 2<<20) + "\n" + okText, 1,
			[]string{"line too long", "1 MiB"}},
		{"later line too long", "-- c\n\n--" + strings.Repeat(" ", 2<<20), 3,
			[]string{"line too long"}},

		// Unknown sections and directives.
		{"unknown section", okText + "-- name: cleanup\nDELETE FROM t;\n", 10,
			[]string{"unknown section", `"cleanup"`}},
		{"section names are case-sensitive", schemaPart + "-- name: Claim\nSELECT 1;\n", 3,
			[]string{"unknown section", `"Claim"`}},
		{"unknown directive", "-- outboxlab: order=fifo\n-- outboxlab: parallel=4\n" + schemaPart + claimPart + completePart + retryPart, 2,
			[]string{"unknown directive", `"parallel"`, "(known: batch, done, fence, lease, max_attempts, order, policy)"}},
		{"directive without =", "-- outboxlab: fifo\n" + schemaPart + claimPart + completePart + retryPart, 1,
			[]string{"directive", `"fifo"`, "KEY=VALUE"}},
		{"bad order value", "-- a comment first\n-- outboxlab: order=lifo\n" + schemaPart + claimPart + completePart + retryPart, 2,
			[]string{"order=lifo", "fifo", "any"}},
		{"empty order value", "-- outboxlab: order=\n" + schemaPart + claimPart + completePart + retryPart, 1,
			[]string{"order=", "want order=fifo or order=any"}},
		{"lease without a unit", "-- outboxlab: lease=30\n" + schemaPart + claimPart + completePart + retryPart, 1,
			[]string{"lease=30", "not a duration", "1s to 24h"}},
		{"lease that is not a duration", "-- outboxlab: order=any\n-- outboxlab: lease=long\n" + schemaPart + claimPart + completePart + retryPart, 2,
			[]string{"lease=long", "not a duration", "lease=30s"}},
		{"empty lease", "-- outboxlab: lease=\n" + schemaPart + claimPart + completePart + retryPart, 1,
			[]string{"lease=:", "not a duration"}},
		{"zero lease", "-- c\n\n-- outboxlab: lease=0s\n" + schemaPart + claimPart + completePart + retryPart, 3,
			[]string{"lease=0s", "out of range", "1s to 24h"}},
		{"bare zero lease", "-- outboxlab: lease=0\n" + schemaPart + claimPart + completePart + retryPart, 1,
			[]string{"lease=0", "out of range"}},
		{"negative lease", "-- outboxlab: lease=-30s\n" + schemaPart + claimPart + completePart + retryPart, 1,
			[]string{"lease=-30s", "out of range"}},
		{"lease under a second", "-- outboxlab: lease=999ms\n" + schemaPart + claimPart + completePart + retryPart, 1,
			[]string{"lease=999ms", "out of range", "1s to 24h"}},
		{"lease over a day", "-- outboxlab: order=fifo\n-- outboxlab: lease=24h0m0.001s\n" + schemaPart + claimPart + completePart + retryPart, 2,
			[]string{"lease=24h0m0.001s", "out of range"}},
		{"lease of days", "-- outboxlab: lease=2d\n" + schemaPart + claimPart + completePart + retryPart, 1,
			[]string{"lease=2d", "not a duration"}},
		{"lease that overflows", "-- outboxlab: lease=9999999999h\n" + schemaPart + claimPart + completePart + retryPart, 1,
			[]string{"lease=9999999999h", "not a duration"}},
		{"lease after the first section", schemaPart + "-- outboxlab: lease=5m\n" + claimPart + completePart + retryPart, 3,
			[]string{"directive", "lease=5m", "after the first section"}},
		{"directive after the first section", schemaPart + "-- outboxlab: order=any\n" + claimPart + completePart + retryPart, 3,
			[]string{"directive", "order=any", "after the first section"}},
		{"directive at the end", okText + "-- outboxlab: order=any\n", 10,
			[]string{"after the first section"}},

		// Duplicated section.
		{"duplicated section", okText + "-- name: claim\nSELECT 2 AS id, 'f' AS event_id;\n", 10,
			[]string{`section "claim" appears twice`, "first at line 4"}},
		{"duplicated schema", schemaPart + schemaPart + claimPart + completePart + retryPart, 3,
			[]string{`section "schema" appears twice`, "first at line 1"}},

		// A second statement in a single-statement section: the line where
		// the second statement starts.
		{"second statement on the next line",
			okText + "-- name: state\nSELECT 1 AS id, 'e' AS event_id;\nSELECT 2;\n", 12,
			[]string{`section "state"`, "2 statements", "exactly one"}},
		{"second statement on the same line",
			okText + "-- name: state\nSELECT 1 AS id, 'e' AS event_id; SELECT 2;\n", 11,
			[]string{`section "state"`, "2 statements"}},
		{"second statement after blank lines",
			okText + "-- name: state\nSELECT 1 AS id,\n  'e' AS event_id;\n\n\n  SELECT 2\n", 15,
			[]string{`section "state"`, "2 statements"}},
		{"second statement after a comment line",
			okText + "-- name: expire\nUPDATE t SET id = @id;\n-- the second one:\nSELECT 2;\n", 13,
			[]string{`section "expire"`, "2 statements"}},
		{"second statement after a block comment",
			okText + "-- name: expire\nUPDATE t SET id = @id; /* note\n   on two lines */\nSELECT 2;\n", 13,
			[]string{`section "expire"`, "2 statements"}},
		{"second statement after an empty statement",
			okText + "-- name: due\nUPDATE t SET id = @id;\n;\nSELECT 2;\n", 13,
			[]string{`section "due"`, "2 statements"}},
		{"three statements in state",
			okText + "-- name: state\nSELECT 1;\nSELECT 2;\nSELECT 3;\n", 12,
			[]string{`section "state"`, "3 statements", "exactly one"}},
		{"second statement in an optional section",
			okText + "-- name: enqueue\nINSERT INTO t VALUES (1);\nINSERT INTO t VALUES (2)\n", 12,
			[]string{`section "enqueue"`, "2 statements"}},
		// A multi-statement section still takes only its own parameters,
		// in any of its statements.
		{"@id in the second statement of a claim",
			schemaPart + "-- name: claim\nCREATE TEMP TABLE picked AS SELECT 1 AS id;\nSELECT id, 'e' AS event_id\nFROM picked WHERE id = @id;\n" + completePart + retryPart, 6,
			[]string{`section "claim"`, "does not take parameter @id"}},

		// Parameters a section does not take: the line of the parameter.
		{"@generation in claim",
			schemaPart + "-- name: claim\nSELECT 1 AS id, 'e' AS event_id\nWHERE 1 = @generation;\n" + completePart + retryPart, 5,
			[]string{`section "claim"`, "does not take parameter @generation", "@worker"}},
		{"@id in claim",
			schemaPart + "-- name: claim\nSELECT @id AS id, 'e' AS event_id;\n" + completePart + retryPart, 4,
			[]string{`section "claim"`, "@id"}},
		{"@id in enqueue",
			okText + "-- name: enqueue\nINSERT INTO t (id, event_id)\nVALUES (@id, @event_id);\n", 12,
			[]string{`section "enqueue"`, "does not take parameter @id", "@event_id"}},
		{"@worker in schema",
			"-- name: schema\nCREATE TABLE t (id int,\n  owner text DEFAULT @worker);\n" + claimPart + completePart + retryPart, 3,
			[]string{`section "schema"`, "does not take parameter @worker", "no parameters"}},
		{"@id in schema",
			"-- name: schema\nCREATE TABLE t (id int);\nCREATE INDEX ON t (id);\nINSERT INTO t VALUES (@id);\n" + claimPart + completePart + retryPart, 4,
			[]string{`section "schema"`, "@id", "no parameters"}},
		{"@event_id in complete",
			schemaPart + claimPart + "-- name: complete\nUPDATE t SET id = id\nWHERE id = @id\n  AND event_id = @event_id\nRETURNING id;\n" + retryPart, 8,
			[]string{`section "complete"`, "@event_id", "@id, @generation, @worker"}},
		{"@generation in expire",
			okText + "-- name: expire\nUPDATE t SET id = id WHERE id = @id AND @generation > 0;\n", 11,
			[]string{`section "expire"`, "@generation"}},
		{"@id in state",
			okText + "-- name: state\nSELECT * FROM t\n\nWHERE id = @id;\n", 13,
			[]string{`section "state"`, "@id"}},
		{"@generation in age",
			okText + "-- name: age\nUPDATE t SET id = id\nWHERE id = @id AND @generation > 0 AND @seconds > 0;\n", 12,
			[]string{`section "age"`, "does not take parameter @generation", "@id, @seconds, @worker"}},
		{"@seconds in expire",
			okText + "-- name: expire\nUPDATE t SET id = id WHERE id = @id AND @seconds > 0;\n", 11,
			[]string{`section "expire"`, "@seconds", "(it takes @id, @worker)"}},
		{"second statement in age",
			okText + "-- name: age\nUPDATE t SET id = @id;\nSELECT @seconds;\n", 12,
			[]string{`section "age"`, "2 statements"}},
		{"empty age", okText + "-- name: age\n\n", 10,
			[]string{`section "age"`, "no SQL statement"}},
		{"misspelt parameter in retry",
			schemaPart + claimPart + completePart + "-- name: retry\nUPDATE t SET id = id WHERE id = @id AND gen = @gen RETURNING id;\n", 8,
			[]string{`section "retry"`, "@gen "}},

		// Empty sections.
		{"empty claim", schemaPart + "-- name: claim\n\n" + completePart + retryPart, 3,
			[]string{`section "claim"`, "no SQL statement"}},
		{"claim of comments only", schemaPart + "-- name: claim\n-- TODO\n/* later */\n" + completePart + retryPart, 3,
			[]string{`section "claim"`, "no SQL statement"}},
		{"claim of semicolons only", schemaPart + "-- name: claim\n;\n ; \n" + completePart + retryPart, 3,
			[]string{`section "claim"`, "no SQL statement"}},
		{"empty schema", "-- name: schema\n" + claimPart + completePart + retryPart, 1,
			[]string{`section "schema"`, "no SQL statement"}},
		{"empty last section", schemaPart + claimPart + completePart + "-- name: retry", 7,
			[]string{`section "retry"`, "no SQL statement"}},
		{"empty optional section", okText + "-- name: renew\n-- nothing yet\n", 10,
			[]string{`section "renew"`, "no SQL statement"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse("test", "protocols/test.sql", tt.src)
			if err == nil {
				t.Fatalf("Parse succeeded (sections %v); want an error at line %d", keys(p.Sections), tt.line)
			}
			if p != nil {
				t.Errorf("Parse returned a protocol along with error %v", err)
			}
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("error %v (%T) is not a *sut.Error", err, err)
			}
			if perr.File != "protocols/test.sql" {
				t.Errorf("File = %q, want protocols/test.sql", perr.File)
			}
			if perr.Line != tt.line {
				t.Errorf("Line = %d, want %d (error: %v)", perr.Line, tt.line, err)
			}
			for _, w := range tt.words {
				if !strings.Contains(perr.Msg, w) {
					t.Errorf("message %q does not contain %q", perr.Msg, w)
				}
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	_, err := Parse("x", "dir/x.sql", schemaPart+"-- name: bogus\nSELECT 1;\n")
	if err == nil {
		t.Fatal("Parse succeeded; want an error")
	}
	want := `dir/x.sql:3: unknown section "bogus"`
	if got := err.Error(); !strings.HasPrefix(got, want) {
		t.Errorf("Error() = %q, want it to start with %q", got, want)
	}
	e := &Error{File: "a.sql", Line: 7, Msg: "something is wrong"}
	if got := e.Error(); got != "a.sql:7: something is wrong" {
		t.Errorf("Error() = %q", got)
	}
}

func TestParseOK(t *testing.T) {
	p, err := Parse("ok", "ok.sql", okText)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "ok" || p.File != "ok.sql" || p.Source != okText {
		t.Errorf("Name, File, Source = %q, %q, %q", p.Name, p.File, p.Source)
	}
	if p.Order != model.FIFO {
		t.Errorf("Order = %q, want fifo", p.Order)
	}
	for name, line := range map[string]int{Schema: 2, Claim: 4, Complete: 6, Retry: 8} {
		s := p.Sections[name]
		if s == nil {
			t.Fatalf("no section %q", name)
		}
		if s.Line != line || s.Default || s.Name != name {
			t.Errorf("section %q: Line %d Default %v Name %q; want line %d, not default", name, s.Line, s.Default, s.Name, line)
		}
	}
	if got := p.Sections[Claim].SQL; got != "SELECT 1 AS id, 'e' AS event_id;" {
		t.Errorf("claim SQL = %q", got)
	}
	// Optional sections: enqueue, expire, due and age get the outbox_lab
	// defaults (age only until Install finds it does not work); state waits
	// for Install (it depends on the claim's columns); renew stays absent.
	for _, name := range []string{Enqueue, Expire, Due, Age} {
		if s := p.Sections[name]; s == nil || !s.Default || s.SQL == "" {
			t.Errorf("section %q: %+v, want a default", name, s)
		}
	}
	if p.Has(State) || p.Has(Renew) {
		t.Errorf("Has(state)=%v Has(renew)=%v, want both false", p.Has(State), p.Has(Renew))
	}
	if !p.Has(Enqueue) {
		t.Error("Has(enqueue) = false")
	}
}

func TestParseDefaultOrderIsFIFO(t *testing.T) {
	p, err := Parse("x", "x.sql", schemaPart+claimPart+completePart+retryPart)
	if err != nil {
		t.Fatal(err)
	}
	if p.Order != model.FIFO {
		t.Errorf("Order = %q, want fifo", p.Order)
	}
}

func TestParseOrderAny(t *testing.T) {
	for _, directive := range []string{"-- outboxlab: order=any", "-- OUTBOXLAB:   order = any  ", "-- outboxlab: order=any\r"} {
		p, err := Parse("x", "x.sql", "-- comment\n"+directive+"\n\n"+schemaPart+claimPart+completePart+retryPart)
		if err != nil {
			t.Fatalf("%q: %v", directive, err)
		}
		if p.Order != model.Any {
			t.Errorf("%q: Order = %q, want any", directive, p.Order)
		}
	}
}

func TestParseLease(t *testing.T) {
	body := schemaPart + claimPart + completePart + retryPart
	if DefaultLease != 30*time.Second {
		t.Errorf("DefaultLease = %v, want the article's 30s", DefaultLease)
	}
	p, err := Parse("x", "x.sql", body)
	if err != nil {
		t.Fatal(err)
	}
	if p.Lease != DefaultLease {
		t.Errorf("no lease directive: Lease = %v, want %v", p.Lease, DefaultLease)
	}
	for value, want := range map[string]time.Duration{
		"30s":         30 * time.Second,
		"5m":          5 * time.Minute,
		"1h":          time.Hour,
		"1s":          time.Second,
		"24h":         24 * time.Hour,
		"1000ms":      time.Second,
		"1m30s":       90 * time.Second,
		"1.5h":        90 * time.Minute,
		"+45s":        45 * time.Second,
		"23h59m59.9s": 24*time.Hour - 100*time.Millisecond,
	} {
		p, err := Parse("x", "x.sql", "-- outboxlab: lease="+value+"\n"+body)
		if err != nil {
			t.Errorf("lease=%s: %v", value, err)
			continue
		}
		if p.Lease != want {
			t.Errorf("lease=%s: Lease = %v, want %v", value, p.Lease, want)
		}
	}
	// Spaces around the value, any case for the prefix, and with order.
	p, err = Parse("x", "x.sql", "-- OUTBOXLAB: lease = 2m \r\n-- outboxlab: order=any\n"+body)
	if err != nil || p.Lease != 2*time.Minute || p.Order != model.Any {
		t.Errorf("lease = 2m with order=any: %+v, %v", p, err)
	}
}

func TestParseOwnSections(t *testing.T) {
	src := okText + `-- name: renew
UPDATE t SET id = id WHERE id = @id AND @generation > 0 AND @worker <> '' RETURNING id
-- name: enqueue
INSERT INTO t (event_id) VALUES (@event_id)
-- name: state
SELECT id, event_id, 'READY' AS status, NULL::boolean AS lease_expired, true AS due FROM t ORDER BY id
-- name: expire
UPDATE t SET id = id WHERE id = @id
-- name: due
UPDATE t SET id = id WHERE id = @id
-- name: age
UPDATE t SET id = id WHERE id = @id AND @seconds > 0 AND @worker <> ''
`
	p, err := Parse("x", "x.sql", src)
	if err != nil {
		t.Fatal(err)
	}
	for name, line := range map[string]int{Renew: 10, Enqueue: 12, State: 14, Expire: 16, Due: 18, Age: 20} {
		s := p.Sections[name]
		if s == nil || s.Default || s.Line != line {
			t.Errorf("section %q: %+v, want the file's own at line %d", name, s, line)
		}
	}
	if got := p.Sections[Enqueue].SQL; got != "INSERT INTO t (event_id) VALUES (@event_id)" {
		t.Errorf("enqueue SQL = %q", got)
	}
}

// TestParseNotParameters: @ inside literals, comments, quoted identifiers and
// dollar-quoted bodies, and @ operators, are not parameters (claim takes only
// @worker, so any of these read as a parameter would be an error).
func TestParseNotParameters(t *testing.T) {
	cases := map[string]string{
		"string literal":          `SELECT '@id' AS id, 'x @generation y' AS event_id`,
		"doubled quote in string": `SELECT 'it''s @id' AS id, '' AS event_id`,
		"escape string":           `SELECT E'\'@id' AS id, E'a\\' AS event_id, @worker AS w`,
		"line comment":            "SELECT 1 AS id, -- @id is not here\n 'e' AS event_id",
		"block comment":           "SELECT 1 AS id, /* @id\n @generation */ 'e' AS event_id",
		"nested block comment":    "SELECT 1 AS id, /* outer /* inner */ @id */ 'e' AS event_id",
		"quoted identifier":       `SELECT 1 AS "@id", 'e' AS "x""@generation"`,
		"dollar body":             `SELECT $$ @id $$ AS id, 'e' AS event_id`,
		"tagged dollar body":      "SELECT $fn$ @id; $$ @generation $$ $fn$ AS id, 'e' AS event_id",
		"containment operator":    `SELECT 1 AS id, 'e' AS event_id WHERE '{1,2}'::int[] @> '{1}'`,
		"text search operator":    `SELECT 1 AS id, 'e' AS event_id WHERE to_tsvector('a b') @@ to_tsquery('a')`,
		"abs operator":            `SELECT 1 AS id, 'e' AS event_id WHERE @ -1 = 1`,
		"at in an identifier":     `SELECT 1 AS id, 'e' AS event_id WHERE 'a' = e@x`,
		"dollar in an identifier": `SELECT 1 AS id, 'e' AS event_id FROM t AS a$b$ WHERE a$b$.c = @worker`,
		"positional parameter":    `SELECT $1 AS id, 'e' AS event_id WHERE @worker <> ''`,
	}
	for name, claim := range cases {
		t.Run(name, func(t *testing.T) {
			src := schemaPart + "-- name: claim\n" + claim + "\n" + completePart + retryPart
			p, err := Parse("x", "x.sql", src)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Sections[Claim].SQL; got != claim {
				t.Errorf("claim SQL = %q, want %q", got, claim)
			}
		})
	}
	// Schema takes no parameters at all, but a function body may use @.
	src := `-- name: schema
CREATE TABLE t (id int, tags int[]);
CREATE FUNCTION f(x int) RETURNS int LANGUAGE plpgsql AS $body$
BEGIN
  RETURN @x; -- absolute value; ';' inside the body
END
$body$;
CREATE INDEX ON t USING gin (tags);
` + claimPart + completePart + retryPart
	if _, err := Parse("x", "x.sql", src); err != nil {
		t.Errorf("schema with a function body: %v", err)
	}
}

// TestParseSemicolonsInside: a ; inside a literal, identifier, comment or
// dollar body does not end the statement.
func TestParseSemicolonsInside(t *testing.T) {
	cases := map[string]string{
		"string literal":     `SELECT ';' AS id, 'a;b' AS event_id;`,
		"escape string":      `SELECT E'\';' AS id, 'e' AS event_id;`,
		"quoted identifier":  `SELECT 1 AS "a;b", 'e' AS event_id`,
		"line comment":       "SELECT 1 AS id, -- a; b\n 'e' AS event_id;",
		"block comment":      "SELECT 1 AS id, /* a;\n b; */ 'e' AS event_id",
		"dollar body":        `SELECT $$;$$ AS id, $x$ ; $x$ AS event_id;`,
		"trailing comment":   "SELECT 1 AS id, 'e' AS event_id; -- done; really",
		"trailing block":     "SELECT 1 AS id, 'e' AS event_id; /* done */",
		"trailing semicolon": "SELECT 1 AS id, 'e' AS event_id;\n;\n",
		"no semicolon":       "SELECT 1 AS id, 'e' AS event_id",
	}
	for name, claim := range cases {
		t.Run(name, func(t *testing.T) {
			src := schemaPart + "-- name: claim\n" + claim + "\n" + completePart + retryPart
			if _, err := Parse("x", "x.sql", src); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestParseSchemaTakesSeveralStatements(t *testing.T) {
	src := "-- name: schema\nCREATE TABLE a (id int);\nCREATE TABLE b (id int);\n\nCREATE INDEX ON a (id)\n" + claimPart + completePart + retryPart
	p, err := Parse("x", "x.sql", src)
	if err != nil {
		t.Fatal(err)
	}
	if n := statementCount(p.Sections[Schema].SQL); n != 3 {
		t.Errorf("statementCount(schema) = %d, want 3", n)
	}
}

func TestParseCRLF(t *testing.T) {
	src := strings.ReplaceAll(okText, "\n", "\r\n")
	p, err := Parse("x", "x.sql", src)
	if err != nil {
		t.Fatal(err)
	}
	if p.Sections[Retry].Line != 8 {
		t.Errorf("retry line = %d, want 8", p.Sections[Retry].Line)
	}
	bad := strings.ReplaceAll(schemaPart+"-- name: claim\nSELECT 1 AS id, 'e' AS event_id\nWHERE @id = 1\n"+completePart+retryPart, "\n", "\r\n")
	_, err = Parse("x", "x.sql", bad)
	var perr *Error
	if !errors.As(err, &perr) || perr.Line != 5 {
		t.Errorf("CRLF file with @id in claim: %v, want a *sut.Error at line 5", err)
	}
}

func TestBuiltinsParse(t *testing.T) {
	if got := BuiltinNames(); !reflect.DeepEqual(got, []string{"baseline", "leased"}) {
		t.Errorf("BuiltinNames() = %v", got)
	}
	for _, name := range []string{"leased", "baseline"} {
		t.Run(name, func(t *testing.T) {
			p, err := Resolve(name)
			if err != nil {
				t.Fatal(err)
			}
			if p.Name != name || p.File != "builtin/"+name+".sql" {
				t.Errorf("Name %q File %q", p.Name, p.File)
			}
			if p.Order != model.FIFO {
				t.Errorf("Order = %q, want fifo", p.Order)
			}
			for _, s := range []string{Schema, Claim, Complete, Retry} {
				if !p.Has(s) || p.Sections[s].Default {
					t.Errorf("section %q missing or default", s)
				}
			}
			for _, s := range []string{Enqueue, Expire, Due, Age} {
				if !p.Has(s) || !p.Sections[s].Default {
					t.Errorf("section %q: want the default", s)
				}
			}
			if p.Has(Renew) {
				t.Error("has a renew section")
			}
			if !strings.Contains(p.Sections[Claim].SQL, "FOR UPDATE SKIP LOCKED") {
				t.Errorf("claim SQL = %q", p.Sections[Claim].SQL)
			}
		})
	}
}

func TestResolveFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mine.sql")
	if err := os.WriteFile(path, []byte(okText), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Resolve(path)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "mine" || p.File != path {
		t.Errorf("Name %q File %q, want mine and %s", p.Name, p.File, path)
	}

	bad := filepath.Join(dir, "bad.sql")
	if err := os.WriteFile(bad, []byte(schemaPart+"-- name: clam\nSELECT 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Resolve(bad)
	var perr *Error
	if !errors.As(err, &perr) || perr.File != bad || perr.Line != 3 {
		t.Errorf("Resolve(bad) = %v, want a *sut.Error at %s:3", err, bad)
	}

	_, err = Resolve(filepath.Join(dir, "absent.sql"))
	if err == nil || errors.As(err, &perr) || !strings.Contains(err.Error(), "leased") {
		t.Errorf("Resolve(absent) = %v, want a plain error listing the built-ins", err)
	}
	if _, err := Resolve("../builtin/leased"); err == nil {
		t.Error("Resolve of a path-like built-in name succeeded")
	}
}

// TestParseTestdata: every file in testdata/bad fails with the line and words
// its first line announces: "-- want: LINE: words".
func TestParseTestdata(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/bad/*.sql")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(b), "\n")
			spec, ok := strings.CutPrefix(first, "-- want: ")
			if !ok {
				t.Fatalf("first line %q is not -- want: LINE: words", first)
			}
			lineText, words, _ := strings.Cut(spec, ": ")
			_, err = Resolve(f)
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("Resolve: %v, want a *sut.Error", err)
			}
			if got := perr.Error(); !strings.HasPrefix(got, f+":"+lineText+": ") || !strings.Contains(got, words) {
				t.Errorf("error %q, want %s:%s: ...%s...", got, f, lineText, words)
			}
		})
	}
}

func TestPositional(t *testing.T) {
	tests := []struct {
		in    string
		out   string
		names []string
	}{
		{"SELECT 1", "SELECT 1", nil},
		{"SELECT 1;", "SELECT 1", nil},
		{"SELECT 1 ; \n\n", "SELECT 1", nil},
		{"UPDATE t SET g = g + 1 WHERE id = @id AND g = @generation RETURNING id;",
			"UPDATE t SET g = g + 1 WHERE id = $1 AND g = $2 RETURNING id", []string{"id", "generation"}},
		{"SELECT @generation, @id, @generation, @id::bigint",
			"SELECT $1, $2, $1, $2::bigint", []string{"generation", "id"}},
		{"SELECT @worker_2, @worker", "SELECT $1, $2", []string{"worker_2", "worker"}},
		{"SELECT '@id', \"@id\", $$@id$$, @id -- @generation\n/* @generation */",
			"SELECT '@id', \"@id\", $$@id$$, $1 -- @generation\n/* @generation */", []string{"id"}},
		{"SELECT a @> b, c @@ d, e@f, (@id)", "SELECT a @> b, c @@ d, e@f, ($1)", []string{"id"}},
		{"SELECT E'\\'@id', @id", "SELECT E'\\'@id', $1", []string{"id"}},
		{"SELECT ';' ; ", "SELECT ';'", nil},
		{"SELECT a$b$, @id, '$x$' || @id", "SELECT a$b$, $1, '$x$' || $1", []string{"id"}},
		{"SELECT /* a /* @id */ @id */ @generation", "SELECT /* a /* @id */ @id */ $1", []string{"generation"}},
		{"SELECT typE'@id', @id", "SELECT typE'@id', $1", []string{"id"}},
	}
	for _, tt := range tests {
		out, names := positional(tt.in)
		if out != tt.out || !reflect.DeepEqual(names, tt.names) {
			t.Errorf("positional(%q) = %q, %q; want %q, %q", tt.in, out, names, tt.out, tt.names)
		}
	}
}

// TestErrorOffset: a server's position in the rewritten statement (1-based,
// in characters) maps back to the byte offset in the section's text.
func TestErrorOffset(t *testing.T) {
	tests := []struct {
		sql  string
		sent string // where the server points, in positional(sql)
		want string // where that is in sql
	}{
		{"SELECT 1 FROM", "FROM", "FROM"},
		{"SELECT @generation, @id FROM x", "FROM", "FROM"},
		{"SELECT @generation, @id FROM x", "$1", "@generation"},
		{"SELECT @generation, @id FROM x", "1, $2", "@generation"}, // inside $1
		{"SELECT @generation, @id FROM x", ", $2", ", @id"},
		{"SELECT @generation, @id FROM x", "$2", "@id"},
		{"SELECT @id, @id, @id AND", "AND", "AND"},
		{"SELECT 'é', @generation, 'ü' ~~~ 1", "'ü'", "'ü'"},
		{"SELECT 'é', @generation, 'ü' ~~~ 1", "~~~", "~~~"},
		{"-- née\nSELECT @a\nWHERE", "WHERE", "WHERE"},
		{"SELECT @worker_10 + @worker_10 WHERE", "WHERE", "WHERE"},
	}
	for _, tt := range tests {
		out, _ := positional(tt.sql)
		position := utf8.RuneCountInString(out[:strings.Index(out, tt.sent)]) + 1
		if got, want := errorOffset(tt.sql, position), strings.Index(tt.sql, tt.want); got != want {
			t.Errorf("errorOffset(%q, %d) = %d (%q), want %d (%q)", tt.sql, position, got, tt.sql[got:], want, tt.want)
		}
	}
	// Past the end (a syntax error at the end of input): the end of the
	// statement, before the trimmed semicolon and blank lines.
	for sql, want := range map[string]int{"SELECT @x +": 11, "SELECT @x +;\n\n": 11, "SELECT 'é' +  \n": 13, "": 0} {
		if got := errorOffset(sql, 100); got != want {
			t.Errorf("errorOffset(%q, 100) = %d, want %d", sql, got, want)
		}
	}
}

func TestWithLiterals(t *testing.T) {
	values := map[string]string{"event_id": "e1", "worker": "harness"}
	tests := []struct{ in, out string }{
		{"INSERT INTO t (event_id) VALUES (@event_id)", "INSERT INTO t (event_id) VALUES ('e1')"},
		{"INSERT INTO t (event_id) VALUES (@event_id);\n\n", "INSERT INTO t (event_id) VALUES ('e1')"},
		{"INSERT INTO t (event_id, who) VALUES (@event_id, @worker); ", "INSERT INTO t (event_id, who) VALUES ('e1', 'harness')"},
		{"INSERT INTO t VALUES (@event_id, @event_id || '-copy')", "INSERT INTO t VALUES ('e1', 'e1' || '-copy')"},
		{"INSERT INTO t VALUES ('@event_id', @event_id) -- @event_id", "INSERT INTO t VALUES ('@event_id', 'e1') -- @event_id"},
		{"INSERT INTO t VALUES (@unknown)", "INSERT INTO t VALUES ('')"},
		{"INSERT INTO t VALUES (1)", "INSERT INTO t VALUES (1)"},
	}
	for _, tt := range tests {
		if got := withLiterals(tt.in, values); got != tt.out {
			t.Errorf("withLiterals(%q) = %q, want %q", tt.in, got, tt.out)
		}
	}
	got := withLiterals("INSERT INTO t VALUES (@event_id)", map[string]string{"event_id": "it's; --"})
	if want := "INSERT INTO t VALUES ('it''s; --')"; got != want {
		t.Errorf("quote doubling: %q, want %q", got, want)
	}
}

func TestStatementCount(t *testing.T) {
	tests := map[string]int{
		"":                           0,
		"  \n-- c\n":                 0,
		";;\n;":                      0,
		"/* c */":                    0,
		"SELECT 1":                   1,
		"SELECT 1;":                  1,
		"SELECT 1; -- done":          1,
		"SELECT 1; /* done */":       1,
		"SELECT ';'; SELECT 2":       2,
		"SELECT 1;\n;\nSELECT 2;":    2,
		"SELECT 1 -- ; not here\n":   1,
		"a; b; c":                    3,
		"SELECT 1 /* a /* b */ ; */": 1,
		"SELECT $$;$$; SELECT a$b$":  2,
	}
	for sql, want := range tests {
		if got := statementCount(sql); got != want {
			t.Errorf("statementCount(%q) = %d, want %d", sql, got, want)
		}
	}
}

func keys(m map[string]*Section) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
