package sut

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/model"
)

// FuzzParse holds the loader to its contract on any text: it never panics;
// it returns a protocol or a *sut.Error at a line of the file; a protocol it
// returns is one the rest of the suite can rely on (the required sections,
// a sane lease, sections that are the file's own lines); and it says the same
// thing twice, and the same for the file with CRLF line ends.
//
//	go test -run '^$' -fuzz FuzzParse -fuzztime 10m
//
// The seeds are every protocol file in the repository; crashers the fuzzer
// found are in testdata/fuzz/FuzzParse and replay with go test.
func FuzzParse(f *testing.F) {
	for _, src := range fuzzSeeds(f) {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Parse("fuzz", "fuzz.sql", src)
		if err != nil {
			checkParseError(t, src, p, err)
		} else {
			checkProtocol(t, src, p)
		}
		again, errAgain := Parse("fuzz", "fuzz.sql", src)
		if !sameParse(p, err, again, errAgain) {
			t.Fatalf("two parses differ:\n%s\n%s", describeParse(p, err), describeParse(again, errAgain))
		}
		// Line ends do not matter. (A file that has \r of its own would get
		// them doubled, which is another text; and the conversion must not
		// push a line over the length limit.)
		if !strings.Contains(src, "\r") && len(src) < maxLine/2 {
			crlf := strings.ReplaceAll(src, "\n", "\r\n")
			pc, errc := Parse("fuzz", "fuzz.sql", crlf)
			if pc != nil {
				pc.Source = src
			}
			if !sameParse(p, err, pc, errc) {
				t.Fatalf("LF and CRLF parses differ:\n%s\n%s", describeParse(p, err), describeParse(pc, errc))
			}
		}
	})
}

// fuzzSeeds reads every protocol file of the repository: the built-ins, the
// test sets under testdata (correct, faults, mutants and their equivalents,
// storm), the bad files of sut and cmd, and a few texts of this package's
// tests.
func fuzzSeeds(f *testing.F) []string {
	seeds := []string{"", "\n", " \r\n\t\n", okText, strings.ReplaceAll(okText, "\n", "\r\n"),
		"-- outboxlab: lease=5m\n" + okText[strings.Index(okText, "\n")+1:],
		okText + "-- name: age\nUPDATE t SET id = id WHERE id = @id AND @seconds > 0\n",
		v2Text}
	for _, dir := range []string{"builtin", "testdata", "../testdata", "../cmd/outboxlab/testdata"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Ext(path) != ".sql" {
				return err
			}
			b, err := os.ReadFile(path)
			seeds = append(seeds, string(b))
			return err
		})
		if err != nil {
			f.Fatalf("seeds from %s: %v", dir, err)
		}
	}
	if len(seeds) < 40 {
		f.Fatalf("%d seeds: the protocol files were not found", len(seeds))
	}
	return seeds
}

// v2Text uses every part of the format's second version: the directives, a
// rescue section and multi-statement sections.
const v2Text = `-- outboxlab: order=any
-- outboxlab: batch=4
-- outboxlab: policy=lenient
-- outboxlab: max_attempts=3
-- outboxlab: done=delete
-- name: schema
CREATE TABLE t (id int);
-- name: claim
CREATE TEMP TABLE picked ON COMMIT DROP AS SELECT id FROM t LIMIT 4 FOR UPDATE SKIP LOCKED;
UPDATE t SET id = t.id FROM picked WHERE t.id = picked.id RETURNING t.id, 'e' AS event_id;
-- name: complete
SELECT 1 WHERE @id IS NOT NULL;
UPDATE t SET id = id WHERE id = @id AND @generation > 0 RETURNING id;
-- name: retry
UPDATE t SET id = id WHERE id = @id AND @generation > 0 RETURNING id;
-- name: rescue
SELECT 1;
UPDATE t SET id = id WHERE @worker <> '';
`

// fileLines splits src into lines as Parse's scanner does: at \n, one \r
// before it dropped, no line after a final \n.
func fileLines(src string) []string {
	if src == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(src, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

func checkParseError(t *testing.T, src string, p *Protocol, err error) {
	if p != nil {
		t.Fatalf("a protocol along with error %v", err)
	}
	perr, ok := err.(*Error)
	if !ok {
		t.Fatalf("error %v is a %T, not a *sut.Error", err, err)
	}
	last := max(1, len(fileLines(src)))
	if perr.File != "fuzz.sql" || perr.Line < 1 || perr.Line > last || perr.Msg == "" {
		t.Fatalf("error %q at %s:%d, want fuzz.sql at a line from 1 to %d, with a message", perr.Msg, perr.File, perr.Line, last)
	}
}

func checkProtocol(t *testing.T, src string, p *Protocol) {
	if p == nil {
		t.Fatal("no protocol and no error")
	}
	if p.Name != "fuzz" || p.File != "fuzz.sql" || p.Source != src {
		t.Fatalf("Name %q File %q, or Source not the text", p.Name, p.File)
	}
	if p.Lease < minLease || p.Lease > maxLease {
		t.Fatalf("Lease = %v", p.Lease)
	}
	if p.Order != model.FIFO && p.Order != model.Any {
		t.Fatalf("Order = %q", p.Order)
	}
	if p.Fence != FenceCounter && p.Fence != FenceToken {
		t.Fatalf("Fence = %d", p.Fence)
	}
	if p.Batch < 1 || p.Batch > maxBatch || p.MaxAttempts < 0 || p.MaxAttempts > maxBatch {
		t.Fatalf("Batch = %d, MaxAttempts = %d", p.Batch, p.MaxAttempts)
	}
	for _, name := range requiredSections {
		if s := p.Sections[name]; s == nil || s.Default {
			t.Fatalf("required section %q: %+v", name, s)
		}
	}
	for _, name := range []string{Enqueue, Expire, Due, Age} {
		// A session lease has no expire or age: the suite ends sessions.
		if none := p.SessionLease && (name == Expire || name == Age); p.Has(name) == none {
			t.Fatalf("section %q, own or default: %v under lease=session %v", name, p.Has(name), p.SessionLease)
		}
	}
	lines := fileLines(src)
	at := map[int]string{}
	for name, s := range p.Sections {
		if s == nil || s.Name != name {
			t.Fatalf("Sections[%q] = %+v", name, s)
		}
		if _, known := sectionParams[name]; !known {
			t.Fatalf("unknown section %q", name)
		}
		if s.Default {
			continue
		}
		checkOwnSection(t, lines, s)
		if other, ok := at[s.Line]; ok {
			t.Fatalf("sections %q and %q both at line %d", other, name, s.Line)
		}
		at[s.Line] = name
	}
}

// checkOwnSection: a section of the file starts at a header line naming it,
// its SQL is the file's lines after the header, and it holds what Parse
// promised: statements, the right number of them, parameters it takes.
func checkOwnSection(t *testing.T, lines []string, s *Section) {
	if s.Line < 1 || s.Line > len(lines) {
		t.Fatalf("section %q at line %d of %d", s.Name, s.Line, len(lines))
	}
	if name, ok := header(strings.TrimSpace(lines[s.Line-1]), "-- name:"); !ok || name != s.Name {
		t.Fatalf("section %q: line %d is %q", s.Name, s.Line, lines[s.Line-1])
	}
	body := strings.Split(s.SQL, "\n")
	if s.Line+len(body) > len(lines) || !reflect.DeepEqual(body, lines[s.Line:s.Line+len(body)]) {
		t.Fatalf("section %q: SQL %q is not the file's lines after line %d", s.Name, s.SQL, s.Line)
	}
	n := statementCount(s.SQL)
	if n == 0 || (s.Name != Schema && !contains(multiSections, s.Name) && n != 1) {
		t.Fatalf("section %q holds %d statements", s.Name, n)
	}
	for _, tok := range scanSQL(s.SQL) {
		if tok.kind == '@' && !contains(sectionParams[s.Name], tok.name) {
			t.Fatalf("section %q takes @%s", s.Name, tok.name)
		}
	}
}

func sameParse(p *Protocol, err error, q *Protocol, errQ error) bool {
	if (err == nil) != (errQ == nil) {
		return false
	}
	if err != nil {
		return err.Error() == errQ.Error()
	}
	return reflect.DeepEqual(p, q)
}

func describeParse(p *Protocol, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	b.WriteString("protocol: order " + string(p.Order) + ", lease " + p.Lease.String() + ", fence " + p.Fence.String())
	for _, s := range p.sorted() {
		b.WriteString("\n  " + s.Name + ": " + strings.ReplaceAll(s.SQL, "\n", `\n`))
	}
	return b.String()
}
