package sut

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/model"
)

// Text-level tests of the format's second version: the batch, policy,
// max_attempts and done directives, the rescue section, and the sections
// that may hold several statements.

// body is the four required sections without directives.
const body = schemaPart + claimPart + completePart + retryPart

func TestParseV2Defaults(t *testing.T) {
	p := mustParse(t, body)
	want := model.Policy{Order: model.FIFO, Batch: 1}
	if got := p.Policy(); got != want {
		t.Errorf("Policy() = %+v, want %+v (version 1)", got, want)
	}
	if p.Batch != 1 || p.Lenient || p.MaxAttempts != 0 || p.DeleteDone || p.Has(Rescue) {
		t.Errorf("Batch %d Lenient %v MaxAttempts %d DeleteDone %v Has(rescue) %v; want 1, false, 0, false, false",
			p.Batch, p.Lenient, p.MaxAttempts, p.DeleteDone, p.Has(Rescue))
	}
}

func TestParseV2Directives(t *testing.T) {
	tests := []struct {
		directives string
		want       model.Policy
	}{
		{"batch=1", model.Policy{Order: model.FIFO, Batch: 1}},
		{"batch=16", model.Policy{Order: model.FIFO, Batch: 16}},
		{"batch = 03", model.Policy{Order: model.FIFO, Batch: 3}},
		{"policy=strict", model.Policy{Order: model.FIFO, Batch: 1}},
		{"policy=lenient", model.Policy{Order: model.FIFO, Batch: 1, Lenient: true}},
		{"max_attempts=1", model.Policy{Order: model.FIFO, Batch: 1, MaxAttempts: 1}},
		{"max_attempts=16", model.Policy{Order: model.FIFO, Batch: 1, MaxAttempts: 16}},
		{"done=keep", model.Policy{Order: model.FIFO, Batch: 1}},
		{"done=delete", model.Policy{Order: model.FIFO, Batch: 1, Delete: true}},
		{"order=any\n-- outboxlab: batch=4\n-- outboxlab: policy=lenient\n-- outboxlab: max_attempts=3\n-- outboxlab: done=delete",
			model.Policy{Order: model.Any, Batch: 4, Lenient: true, MaxAttempts: 3, Delete: true}},
	}
	for _, tt := range tests {
		p, err := Parse("x", "x.sql", "-- outboxlab: "+tt.directives+"\n"+body)
		if err != nil {
			t.Errorf("%q: %v", tt.directives, err)
			continue
		}
		if got := p.Policy(); got != tt.want {
			t.Errorf("%q: Policy() = %+v, want %+v", tt.directives, got, tt.want)
		}
	}
}

func TestParseV2DirectiveErrors(t *testing.T) {
	tests := []struct {
		directive string
		msg       string // the whole message, so that the lead's texts stay put
	}{
		{"batch=0", "batch=0: out of range: want an integer from 1 to 16"},
		{"batch=17", "batch=17: out of range: want an integer from 1 to 16"},
		{"batch=99999999999999999999", "batch=99999999999999999999: out of range: want an integer from 1 to 16"},
		{"batch=-1", "batch=-1: not an integer: want an integer from 1 to 16"},
		{"batch=+2", "batch=+2: not an integer: want an integer from 1 to 16"},
		{"batch=two", "batch=two: not an integer: want an integer from 1 to 16"},
		{"batch=", "batch=: not an integer: want an integer from 1 to 16"},
		{"batch=1.5", "batch=1.5: not an integer: want an integer from 1 to 16"},
		{"max_attempts=0", "max_attempts=0: out of range: want an integer from 1 to 16"},
		{"max_attempts=100", "max_attempts=100: out of range: want an integer from 1 to 16"},
		{"max_attempts=many", "max_attempts=many: not an integer: want an integer from 1 to 16"},
		{"policy=loose", "policy=loose: want policy=strict or policy=lenient"},
		{"policy=", "policy=: want policy=strict or policy=lenient"},
		{"policy=Strict", "policy=Strict: want policy=strict or policy=lenient"},
		{"done=drop", "done=drop: want done=keep or done=delete"},
		{"done=", "done=: want done=keep or done=delete"},
		{"maxattempts=3", `unknown directive "maxattempts" (known: batch, done, fence, lease, max_attempts, order, policy)`},
	}
	for _, tt := range tests {
		// Line 3: after a comment and a good directive.
		_, err := Parse("x", "dir/x.sql", "-- a comment\n-- outboxlab: order=fifo\n-- outboxlab: "+tt.directive+"\n"+body)
		var perr *Error
		if !errors.As(err, &perr) {
			t.Errorf("%q: error %v, want a *sut.Error", tt.directive, err)
			continue
		}
		if perr.File != "dir/x.sql" || perr.Line != 3 || perr.Msg != tt.msg {
			t.Errorf("%q: %v\nwant dir/x.sql:3: %s", tt.directive, err, tt.msg)
		}
	}
}

func TestParseRescue(t *testing.T) {
	src := body + "-- name: rescue\nUPDATE t SET id = id WHERE @worker <> '';\n"
	p := mustParse(t, src)
	s := p.Sections[Rescue]
	if s == nil || s.Default || s.Line != 9 {
		t.Fatalf("rescue section %+v, want the file's own at line 9", s)
	}
	if !p.Policy().Rescue {
		t.Error("Policy().Rescue = false with a rescue section")
	}
	// A rescue acts on every expired row at once: it is given no row.
	_, err := Parse("x", "x.sql", body+"-- name: rescue\nUPDATE t SET id = id\nWHERE id = @id;\n")
	var perr *Error
	if !errors.As(err, &perr) || perr.Line != 11 ||
		perr.Msg != `section "rescue" does not take parameter @id (it takes @worker)` {
		t.Errorf("rescue with @id: %v, want x.sql:11: section \"rescue\" does not take parameter @id (it takes @worker)", err)
	}
}

// TestParseMultiStatementSections: claim, complete, retry, renew and rescue
// may hold several statements; Parse keeps the text as written.
func TestParseMultiStatementSections(t *testing.T) {
	const claim = "-- name: claim\nCREATE TEMP TABLE picked ON COMMIT DROP AS\n  SELECT id FROM t LIMIT 1 FOR UPDATE SKIP LOCKED;\n" +
		"UPDATE t SET id = t.id FROM picked WHERE t.id = picked.id AND @worker <> ''\nRETURNING t.id, 'e' AS event_id;\n"
	const complete = "-- name: complete\nSELECT 1 WHERE @id IS NOT NULL;\nUPDATE t SET id = id WHERE id = @id AND @generation > 0 RETURNING id;\n"
	const renew = "-- name: renew\nSELECT 1;\nSELECT 2;\nUPDATE t SET id = id WHERE id = @id RETURNING id;\n"
	const rescue = "-- name: rescue\nSELECT 1;\nUPDATE t SET id = id WHERE @worker <> ''\n"
	src := schemaPart + claim + complete + retryPart + renew + rescue
	p := mustParse(t, src)
	for name, n := range map[string]int{Claim: 2, Complete: 2, Retry: 1, Renew: 3, Rescue: 2} {
		s := p.Sections[name]
		if s == nil {
			t.Fatalf("no section %q", name)
		}
		if got := statementCount(s.SQL); got != n {
			t.Errorf("section %q holds %d statements, want %d", name, got, n)
		}
	}
	if got, want := p.Sections[Claim].SQL, strings.TrimSuffix(strings.TrimPrefix(claim, "-- name: claim\n"), "\n"); got != want {
		t.Errorf("claim SQL = %q, want the file's text %q", got, want)
	}
}

func TestStatementPieces(t *testing.T) {
	sql := "-- lead\nSELECT 1;\n;\n  SELECT ';' /* ; */ ;\n-- tail; not a statement\nSELECT $$;$$"
	got := statementPieces(sql)
	var texts []string
	for _, pc := range got {
		texts = append(texts, sql[pc.start:pc.end])
	}
	want := []string{"-- lead\nSELECT 1", "\n  SELECT ';' /* ; */ ", "\n-- tail; not a statement\nSELECT $$;$$"}
	if !reflect.DeepEqual(texts, want) {
		t.Errorf("statementPieces = %q, want %q", texts, want)
	}
	if got := statementPieces("SELECT 1;\n"); len(got) != 1 || got[0].start != 0 || got[0].end != 8 {
		t.Errorf("one statement: %+v, want [0, 8)", got)
	}
}
