package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ordinals are the ordinal words that, before "session" or "wave", or as
// a noun ("since the eighth,"), name a period of the project's own work.
const ordinals = `first|second|` + laterOrdinals

// laterOrdinals alone name a period as a noun: "the first," is ordinary
// prose, "since the eighth," is not.
const laterOrdinals = `third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth`

// historyWords are the ways a page or a comment has named how the work was
// organised, or when, instead of what was measured: a measurement names
// its command, commit, date and machine. PostgreSQL's and PgBouncer's
// sessions (a session's lock, lease=session, pooler-session, the sessions
// a check ends) are the product's words, and none of these matches them.
var historyWords = regexp.MustCompile(`(?i)` + strings.Join([]string{
	`\b(` + ordinals + `)('s)?\s+(session|wave)s?\b`,
	`\bthe (` + laterOrdinals + `)('s\b|[,)]| code\b| cuts\b)`,
	`\b(this|previous|earlier|later) (session|wave)\b`,
	`\bsession's (first|later|final|own) (code|commit|runs?)\b`,
	`\bsession's (code|machine|submission|validation|cuts|measurements?)\b`,
	`\bhelpers?('s)? runs?\b`, `\bthe helpers\b`, `\ba helper's\b`,
	`\bsubmissions?\b`, `\bwaves?\b`,
}, "|"))

// TestNoDevelopmentHistory: README.md, docs/, testdata's pages, .ci/, the
// workflows, and every Go file's comments and function names speak of the
// project as it is. The integrator's page docs/architecture.md is held too.
func TestNoDevelopmentHistory(t *testing.T) {
	root := filepath.Join("..", "..")
	var problems []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".git" || rel == "artifacts" || strings.HasSuffix(rel, "/node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case rel == "cmd/outboxlab/docs_history_test.go":
			// The words themselves, as the check's own examples.
		case strings.HasSuffix(rel, ".go"):
			problems = append(problems, goHistory(t, path, rel)...)
		case strings.HasSuffix(rel, ".md"), strings.HasPrefix(rel, ".ci/"), strings.HasPrefix(rel, ".github/"):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			problems = append(problems, textHistory(rel, 1, string(b))...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Errorf("%d places name a period or the organisation of the work, not a measurement (command, commit, date, machine):\n  %s",
			len(problems), strings.Join(problems, "\n  "))
	}
}

// textHistory reports every line of text, the first numbered line, that
// uses a history word. A phrase broken over two lines is found too: each
// line is read with the start of the next.
func textHistory(name string, line int, text string) []string {
	var out []string
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		joined := l
		if i+1 < len(lines) {
			joined += " " + strings.TrimLeft(strings.TrimSpace(lines[i+1]), "/#*- ")
		}
		m := historyWords.FindStringIndex(joined)
		if m == nil || m[0] >= len(l) {
			continue // none, or one that starts on the next line: reported there
		}
		out = append(out, fmt.Sprintf("%s:%d: %q", name, line+i, joined[m[0]:m[1]]))
	}
	return out
}

// goHistory reports the history words of a Go file's comments and the
// names of its functions (a test's name is read by whoever runs it).
func goHistory(t *testing.T, path, rel string) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	var out []string
	for _, g := range f.Comments {
		for _, c := range g.List {
			out = append(out, textHistory(rel, fset.Position(c.Pos()).Line, c.Text)...)
		}
	}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok {
			words := strings.ToLower(strings.Join(camelWords(fn.Name.Name), " "))
			if m := historyWords.FindString(words); m != "" {
				out = append(out, fmt.Sprintf("%s:%d: func %s (%q)", rel, fset.Position(fn.Pos()).Line, fn.Name.Name, m))
			}
		}
	}
	return out
}

// camelWords splits TestFifteenthSessionCuts into Test, Fifteenth, Session, Cuts.
func camelWords(name string) []string {
	var words []string
	start := 0
	for i := 1; i < len(name); i++ {
		if name[i] >= 'A' && name[i] <= 'Z' && !(name[i-1] >= 'A' && name[i-1] <= 'Z') {
			words = append(words, name[start:i])
			start = i
		}
	}
	return append(words, name[start:])
}

// TestHistoryWordsFound: the check finds each way the work's periods and
// organisation have been named, across a line break too, and leaves the
// product's sessions and ordinary ordinals alone.
func TestHistoryWordsFound(t *testing.T) {
	// The phrases as templates: PERIOD is the word the work's periods were
	// named by, ROLE the word for who ran what, each written once here.
	const period, helper = "session", "helper"
	var bad []string
	for _, tmpl := range []string{
		"in the fifteenth PERIOD CI took 938 s",
		"the fourteenth PERIOD's final code",
		"12 since the fifteenth's cuts",
		"Since the fourteenth, go test ./... is",
		"with the topologies CI took 959 s; since the eighth,",
		"with a ROLE's runs beside them",
		"For River and Oban the ROLEs checked this",
		"CI runs the same script on every submission",
		"after this wave's other work",
		"the PERIOD's later code with the session-lease tests",
		"CI's time this PERIOD",
		"the first PERIOD",
	} {
		bad = append(bad, strings.NewReplacer("PERIOD", period, "ROLE", helper).Replace(tmpl))
	}
	for _, bad := range bad {
		if got := textHistory("x.md", 1, bad); len(got) != 1 {
			t.Errorf("%q: %v, want one problem", bad, got)
		}
	}
	if got := textHistory("x.md", 7, "measured in the twelfth\nsession, on a slow machine"); len(got) != 1 || !strings.HasPrefix(got[0], "x.md:7:") {
		t.Errorf("a phrase over two lines: %v, want one problem at x.md:7", got)
	}
	if got := camelWords("TestFifteenthSessionCuts"); strings.Join(got, " ") != "Test Fifteenth Session Cuts" {
		t.Errorf("camelWords = %v", got)
	}
	for _, good := range []string{
		"a session's advisory lock (`lease=session`), pooler-session",
		"session_lease_any_holder.sql, the session-lease tests",
		"the machine ends sessions itself between checks; all four sessions were seen waiting",
		"a session lease has no expire; the sessions that hold leases",
		"a third of the budget, every fourth history, a fifth of the CPU, the seventh of a second",
		"the third field is the latency; the first round of shrinking; a second round starts",
		"a test helper (t.Helper), the helper process TestHoldTopologiesHelper",
		"waiting on another session's lock; the pid may be another session's",
	} {
		if got := textHistory("x.md", 1, good); len(got) != 0 {
			t.Errorf("%q: %v, want none", good, got)
		}
	}
}
