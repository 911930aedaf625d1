package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// TestDocs holds README.md and docs/*.md to the repository: every
// relative link resolves (its file, and its #anchor to a heading), every
// outboxlab command in a code block parses with the CLI's flag sets, and
// every testdata/... path named exists. The checker is in
// docs_check_test.go and docs_commands_test.go; the tests after this one
// show each check failing.
func TestDocs(t *testing.T) {
	setParseOnly(t)
	root := filepath.Join("..", "..")
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	fsys := os.DirFS(root)
	var problems []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, f)
		for _, p := range checkDoc(fsys, filepath.ToSlash(name), string(b), parseWithCLI) {
			problems = append(problems, p.String())
		}
	}
	if len(problems) > 0 {
		t.Errorf("%d problems in README.md and docs/:\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
}

// setParseOnly makes run parse its flags and stop, for the test's length.
func setParseOnly(t *testing.T) {
	parseOnly = true
	t.Cleanup(func() { parseOnly = false })
}

// docsFS is a repository for the checker's own tests.
var docsFS = fstest.MapFS{
	"README.md":                   {Data: []byte("# outboxlab\n")},
	"docs/verdicts.md":            {Data: []byte("# Verdicts\n\n## Coverage classes\n\n## Coverage classes\n\nShrinking\n---------\n\n## The `--json` output\n\n    # not a heading\n")},
	"testdata/libraries/oban.sql": {Data: []byte("-- oban\n")},
	"examples/outbox/go.mod":      {Data: []byte("module x\n")},
}

// checkSnippet runs the whole checker on one in-memory file.
func checkSnippet(t *testing.T, name, content string) []string {
	t.Helper()
	setParseOnly(t)
	var out []string
	for _, p := range checkDoc(docsFS, name, content, parseWithCLI) {
		out = append(out, p.String())
	}
	return out
}

// wantProblems: the snippet's problems are exactly these, each given as
// FILE:LINE and a part of its message.
func wantProblems(t *testing.T, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d problems, want %d:\n  %s", len(got), len(want), strings.Join(got, "\n  "))
		return
	}
	for i, w := range want {
		at, msg, _ := strings.Cut(w, " ")
		if !strings.HasPrefix(got[i], at+": ") || !strings.Contains(got[i], msg) {
			t.Errorf("problem %d is %q, want %s ... %s", i, got[i], at, msg)
		}
	}
}

func TestDocsCheckBrokenLink(t *testing.T) {
	got := checkSnippet(t, "docs/faults.md", "# Faults\n\nSee [the verdicts](verdicts.md), [home](../README.md),\n"+
		"[the example](../examples/outbox/) and ![a picture](img/report.png \"the report\").\n\n"+
		"[gone](missing.md) and [out](../../x.md), [ref][nope] and [ref][ok].\n\n"+
		"[ok]: ../testdata/libraries/oban.sql\n[bad]: <../no/such.sql>\n[^1]: A footnote, not a link.\n\n"+
		"[![the report](img/shot.png)](verdicts.md)\n")
	wantProblems(t, got,
		"docs/faults.md:4 no file docs/img/report.png",
		"docs/faults.md:6 no file docs/missing.md",
		"docs/faults.md:6 outside the repository",
		"docs/faults.md:12 no file docs/img/shot.png",
		"docs/faults.md:9 no file no/such.sql",
		"docs/faults.md:6 no reference [nope]: defined")
}

func TestDocsCheckBrokenAnchor(t *testing.T) {
	got := checkSnippet(t, "README.md", "# outboxlab\n\n## Run it\n\n"+
		"[1](docs/verdicts.md#coverage-classes) [2](docs/verdicts.md#coverage-classes-1) [3](docs/verdicts.md#shrinking)\n"+
		"[4](docs/verdicts.md#the---json-output) [5](#run-it) [6](README.md#outboxlab)\n"+
		"[7](docs/verdicts.md#coverage-classes-2) [8](docs/verdicts.md#not-a-heading)\n\n"+
		"[9](#run) [10](docs/verdicts.md#Verdicts)\n")
	wantProblems(t, got,
		"README.md:7 no heading #coverage-classes-2 in docs/verdicts.md",
		"README.md:7 no heading #not-a-heading in docs/verdicts.md",
		"README.md:9 no heading #run in README.md",
		"README.md:9 no heading #Verdicts in docs/verdicts.md")
}

func TestDocsCheckUnknownFlag(t *testing.T) {
	got := checkSnippet(t, "docs/faults.md", "# Faults\n\n    outboxlab check --faults leased\n    outboxlab check --no-such-flag\n\n"+
		"```sh\n$ go run ./cmd/outboxlab bench --backlog --sizes 1e3 --jsn\n```\n\n## Right after a heading\n    outboxlab scenarios --html\n\n"+
		"A paragraph's lazy line is not code:\n    outboxlab check --no-such-flag\n")
	wantProblems(t, got,
		"docs/faults.md:4 flag provided but not defined: -no-such-flag",
		"docs/faults.md:7 flag provided but not defined: -jsn",
		"docs/faults.md:11 flag provided but not defined: -html")
}

func TestDocsCheckUnknownSubcommand(t *testing.T) {
	got := checkSnippet(t, "docs/relay.md", "# Relay\n\n```\ngo run ./cmd/outboxlab chekc --broker leased\n```\n\n"+
		"  - a list item\n\n        outboxlab relay leased\n")
	wantProblems(t, got,
		`docs/relay.md:4 unknown command "chekc"`,
		`docs/relay.md:9 unknown command "relay"`)
}

func TestDocsCheckMissingTestdata(t *testing.T) {
	got := checkSnippet(t, "docs/libraries.md", "# Libraries\n\nThe files, testdata/libraries/*.sql, and `testdata/libraries/oban.sql`.\n"+
		"See testdata/libraries/nope.sql.\n\n    outboxlab check testdata/mutants/*.sql\n")
	wantProblems(t, got,
		"docs/libraries.md:4 no file testdata/libraries/nope.sql",
		"docs/libraries.md:6 testdata/mutants/*.sql matches no file")
}

// TestDocsCheckPasses: what is not a broken link, command or path is not
// reported: links in code, absolute links, shell syntax around a command,
// synopses, placeholders and printed output.
func TestDocsCheckPasses(t *testing.T) {
	got := checkSnippet(t, "docs/verdicts.md", "# Verdicts\n\n"+
		"`[not a link](nowhere.md)` and https://example.com/x.md, [web](https://example.com/y.md), [mail](mailto:a@b.c).\n"+
		"A \\[not](a-link.md) and <!-- [hidden](gone.md) -->; `go run ./cmd/outboxlab nosuch` in prose is not checked.\n\n"+
		"```sh\n[in code](gone.md)\n"+
		"go run ./cmd/outboxlab check --json --seed $s baseline | jq .counterexample_steps   # comment --nope\n"+
		"for s in $(seq 1 20); do outboxlab check --broker --json --seed $s leased; done\n"+
		"RAPID_CHECKS=10 outboxlab check --shard 1/4 --seed 3 \\\n    --faults=false leased > out.txt 2>&1 && echo ok\n"+
		"outboxlab bench --only concurrent [--json] && outboxlab bench --backlog --sizes 1000[,1000000] --for D --churn 0\n"+
		"outboxlab check [flags] [PROTOCOL ...]\noutboxlab COMMAND -h\noutboxlab\noutboxlab check: --checks and --steps must be positive\n"+
		"outboxlab check --seed <seed> --shard K/N --shrink-time=D --faults=$F testdata/libraries/*.sql\n"+
		"go install github.com/outboxlab/outboxlab/cmd/outboxlab@latest && go run github.com/outboxlab/outboxlab/cmd/outboxlab@v1.2.0 scenarios\n"+
		"```\n\n    baseline: FAIL\n      reproduce: outboxlab check --checks 1 --seed 4721420954342791 baseline\n"+
		"    {\"result\": \"fail\", \"reproduce\": \"outboxlab check --checks 1 --seed 7 --faults=false leased\"}\n")
	wantProblems(t, got)
	// And the same printed output, broken, is reported.
	got = checkSnippet(t, "docs/verdicts.md", "# Verdicts\n\n    reproduce: outboxlab check --chekcs 1 baseline\n"+
		"    {\"reproduce\": \"outboxlab check --seed x leased\"}\n    outboxlab check --seed 5 --workers FOUR --report\n")
	wantProblems(t, got,
		"docs/verdicts.md:3 -chekcs",
		`docs/verdicts.md:4 invalid value "x" for flag -seed`,
		"docs/verdicts.md:5 flag needs an argument: -report")
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"The libraries":                         "the-libraries",
		"The `--json` output":                   "the---json-output",
		"What the database cannot promise (v2)": "what-the-database-cannot-promise-v2",
		"Races: `race_*` and waiting steps":     "races-race_-and-waiting-steps",
		"[Relay mode](relay.md), _briefly_":     "relay-mode-briefly",
		"Oban & River: ✓/✗":                     "oban--river-",
		"check --profile's verdicts":            "check---profiles-verdicts",
		"`retry_last_attempt_ready`":            "retry_last_attempt_ready",
	} {
		if got := slug(headingText(heading)); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

func TestShellWords(t *testing.T) {
	for line, want := range map[string][][]string{
		`outboxlab check --seed 1 'my file.sql' "a \"b\"" # --nope`:                   {{"check", "--seed", "1", "my file.sql", `a "b"`}},
		`x | outboxlab bench; outboxlab scenarios>out && outboxlab check 2>&1`:        {{"bench"}, {"scenarios"}, {"check"}},
		`for s in $(seq 1 3); do go run -race ./cmd/outboxlab/ check --seed $s; done`: {{"check", "--seed", "$s"}},
		`cmd/outboxlab/   the CLI`:    nil,
		`go run ./cmd/other check`:    nil,
		`echo outboxlab check --nope`: nil,
		`$ outboxlab check x#y`:       {{"check", "x#y"}},
	} {
		if got := outboxlabArgs(line); !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("outboxlabArgs(%q) = %q, want %q", line, got, want)
		}
	}
}

// TestHelpNamesDocsPages: the -h of check, bench (and its modes) and
// scenarios names the docs page of each topic, and each page it names is
// in docs/.
func TestHelpNamesDocsPages(t *testing.T) {
	page := regexp.MustCompile(`docs/[a-z0-9-]+\.md`)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"check", "-h"}, []string{"concurrent", "faults", "races", "libraries", "report", "nightly", "json", "relay", "verdicts", "protocol-format", "server"}},
		{[]string{"bench", "-h"}, []string{"performance", "backlog"}},
		{[]string{"bench", "--backlog", "-h"}, []string{"backlog"}},
		{[]string{"bench", "--only", "concurrent", "-h"}, []string{"performance"}},
		{[]string{"scenarios", "-h"}, []string{"evidence", "server"}},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(c.args, &stdout, &stderr); code != exitPass {
			t.Fatalf("%v: exit %d, stderr %q", c.args, code, stderr.String())
		}
		named := page.FindAllString(stdout.String(), -1)
		for _, w := range c.want {
			if !slices.Contains(named, "docs/"+w+".md") {
				t.Errorf("%v does not name docs/%s.md", c.args, w)
			}
		}
		for _, p := range named {
			if _, err := os.Stat(filepath.Join("..", "..", p)); err != nil {
				t.Errorf("%v names %s, which is not in the repository", c.args, p)
			}
		}
	}
}
