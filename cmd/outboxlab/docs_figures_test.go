package main

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/bench"
)

// TestPerformanceTableHasEveryFigure: the first table of
// docs/performance.md has a row for every figure `outboxlab bench --json`
// prints, and each row names a command, a machine and a commit, so that a
// page citing a figure can point at one place that says how and where it
// was measured.
func TestPerformanceTableHasEveryFigure(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "performance.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range figureTableProblems(string(b), benchFigureKeys()) {
		t.Error("docs/performance.md: " + p)
	}
}

// TestFigureTableProblems: a missing figure, a row without a commit and a
// page without the table are each reported.
func TestFigureTableProblems(t *testing.T) {
	page := "# P\n\n## The figures\n\n| figure | value | command | machine | commit (date) |\n|---|---|---|---|---|\n" +
		"| `step_us` | 600 µs | `outboxlab bench --json` | A | abc1234 (2026-12-01) |\n" +
		"| `reset_us` | 200 µs | `outboxlab bench --json` | A | |\n\n| `kill_cycle_ms` | a later table |\n"
	got := strings.Join(figureTableProblems(page, []string{"step_us", "reset_us", "kill_cycle_ms"}), "\n")
	for _, want := range []string{"no row for `kill_cycle_ms`", "row of `reset_us` has no commit"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q do not say %q", got, want)
		}
	}
	if strings.Contains(got, "step_us") {
		t.Errorf("a full row reported: %q", got)
	}
	if got := figureTableProblems("# P\n\nno table\n", []string{"step_us"}); len(got) != 1 || !strings.Contains(got[0], "no table") {
		t.Errorf("a page without the table: %q", got)
	}
}

// benchFigureKeys are the JSON names of bench.Figures' measurements.
func benchFigureKeys() []string {
	var keys []string
	for _, f := range reflect.VisibleFields(reflect.TypeFor[bench.Figures]()) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" && name != "machine" {
			keys = append(keys, name)
		}
	}
	return keys
}

var commitRef = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)

// figureTableProblems reads the first table under "## The figures" and
// reports each key without a row (a backticked name in the row's first
// cell) and each such row without a commit in its last cell.
func figureTableProblems(page string, keys []string) []string {
	_, rest, ok := strings.Cut(page, "\n## The figures\n")
	if !ok {
		return []string{"no table under \"## The figures\""}
	}
	rows := map[string]string{} // key -> last cell
	inTable := false
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for _, k := range keys {
			if strings.Contains(cells[0], "`"+k+"`") {
				rows[k] = cells[len(cells)-1]
			}
		}
	}
	if !inTable {
		return []string{"no table under \"## The figures\""}
	}
	var out []string
	for _, k := range keys {
		last, ok := rows[k]
		switch {
		case !ok:
			out = append(out, "no row for `"+k+"` in the first table")
		case !commitRef.MatchString(last):
			out = append(out, "the row of `"+k+"` has no commit")
		}
	}
	slices.Sort(out)
	return out
}
