package outboxlab

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// A whole table takes hours on two cores (every mutant, equivalent and
// correct file over five seeds). A mutant added to the catalogue gets its
// row without them: OUTBOXLAB_WRITE_ROWS=NAME[,NAME...] measures only the
// named mutants over the table's seeds, as writeMutantsTable does, puts
// their rows into the table docs/evidence.md holds (in place of their old
// ones, or in name order), counts the totals again from the rows, and
// names the rows, their commit and date below the table's own line, which
// stays the measurement of every other row.

// laterRowsPrefix starts the line that names rows measured after the rest.
const laterRowsPrefix = "Rows measured later, each by `OUTBOXLAB_WRITE_ROWS=NAME go test -run TestMutantsCaught .`:"

func writingRows() []string {
	v := os.Getenv("OUTBOXLAB_WRITE_ROWS")
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// writeMutantRows measures the named mutants and writes their rows.
func writeMutantRows(t *testing.T, names []string) {
	honestSearch(t)
	files := protocolFiles(t, mutantDir)
	rows := map[string]string{}
	for _, name := range names {
		i := slices.IndexFunc(files, func(f protocolFile) bool { return f.name == name })
		if i < 0 {
			t.Fatalf("OUTBOXLAB_WRITE_ROWS names %q, which is not a mutant in %s", name, mutantDir)
		}
		rows[name] = tableRow(files[i], measureSeeds(t, files[i], mutantConfig()))
	}
	if t.Failed() {
		return
	}
	b, err := os.ReadFile(mutantsDoc)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- mutants table: begin -->", "<!-- mutants table: end -->"
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q markers", mutantsDoc, begin, end)
	}
	table, err := spliceRows(doc[i+len(begin):j], rows, fmt.Sprintf("at commit %s on %s (load average %s)",
		headCommit(), time.Now().UTC().Format("2006-01-02"), loadAverage()))
	if err != nil {
		t.Fatalf("%s: %v", mutantsDoc, err)
	}
	if err := os.WriteFile(mutantsDoc, []byte(doc[:i+len(begin)]+table+doc[j:]), 0o644); err != nil {
		t.Fatal(err)
	}
}

var totalsLine = regexp.MustCompile(`\*\*\d+ mutants: the six scenarios catch \d+, the state machine \d+\.\*\*( The scenarios miss [^\n]*\.)?`)

// spliceRows puts rows (a mutant's name to its table row) into table, the
// text between the markers, counts its totals again, and names each row's
// measurement (when) in the later-rows line.
func spliceRows(table string, rows map[string]string, when string) (string, error) {
	lines := strings.Split(table, "\n")
	head := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "| mutant |") })
	if head < 0 || head+2 > len(lines) {
		return "", fmt.Errorf("no mutant table")
	}
	first := head + 2 // after the header and its rule
	last := first
	for last < len(lines) && strings.HasPrefix(lines[last], "| `") {
		last++
	}
	body := slices.Clone(lines[first:last])
	names := make([]string, 0, len(rows))
	for name := range rows {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		k := slices.IndexFunc(body, func(l string) bool { return rowName(l) == name })
		if k < 0 {
			k, _ = slices.BinarySearchFunc(body, name, func(l, n string) int { return strings.Compare(rowName(l), n) })
			body = slices.Insert(body, k, rows[name])
		} else {
			body[k] = rows[name]
		}
	}
	lines = slices.Concat(lines[:first], body, lines[last:])

	var mutants, byScenarios, byMachine int
	var missed []string
	for _, l := range body {
		cells := strings.Split(strings.TrimSuffix(l, " |"), " | ")
		if len(cells) < 8 {
			return "", fmt.Errorf("a row of the mutant table has %d cells: %s", len(cells), l)
		}
		mutants++
		if sc := cells[len(cells)-7]; strings.HasPrefix(sc, "yes") {
			byScenarios++
		} else {
			missed = append(missed, "`"+rowName(l)+"`")
		}
		if cells[len(cells)-6] == "yes" {
			byMachine++
		}
	}
	totals := fmt.Sprintf("**%d mutants: the six scenarios catch %d, the state machine %d.**", mutants, byScenarios, byMachine)
	if len(missed) > 0 {
		totals += fmt.Sprintf(" The scenarios miss %s.", strings.Join(missed, ", "))
	}
	out := strings.Join(lines, "\n")
	if !totalsLine.MatchString(out) {
		return "", fmt.Errorf("no totals line in the mutant table")
	}
	out = totalsLine.ReplaceAllLiteralString(out, totals)

	var named []string
	for _, name := range names {
		named = append(named, fmt.Sprintf("`%s` %s", name, when))
	}
	later := strings.Split(out, "\n")
	if k := slices.IndexFunc(later, func(l string) bool { return strings.HasPrefix(l, laterRowsPrefix) }); k >= 0 {
		kept := strings.TrimSuffix(strings.TrimPrefix(later[k], laterRowsPrefix+" "), ".")
		var entries []string
		for _, e := range strings.Split(kept, "; ") {
			if name, _, _ := strings.Cut(strings.TrimPrefix(e, "`"), "`"); !slices.Contains(names, name) {
				entries = append(entries, e)
			}
		}
		later[k] = laterRowsPrefix + " " + strings.Join(append(entries, named...), "; ") + "."
	} else {
		k := slices.IndexFunc(later, func(l string) bool { return totalsLine.MatchString(l) })
		later = slices.Insert(later, k, laterRowsPrefix+" "+strings.Join(named, "; ")+".", "")
	}
	return strings.Join(later, "\n"), nil
}

// rowName is the mutant a table row is for: its first cell, unquoted.
func rowName(row string) string {
	name, _, _ := strings.Cut(strings.TrimPrefix(row, "| `"), "`")
	return name
}

func TestSpliceRows(t *testing.T) {
	table := "\nMeasured by ... at commit abc.\n\n" +
		"**2 mutants: the six scenarios catch 1, the state machine 2.** The scenarios miss `b`.\n\n" +
		"| mutant | the mistake | six scenarios | state machine | checks | time to catch | shrunk in | steps | violation |\n" +
		"|---|---|---|---|---|---|---|---|---|\n" +
		"| `a` | A. | yes: kill_and_recover | yes | 1 | 1s | 1s | 1 | r |\n" +
		"| `c` | C. | no | yes | 1 | 1s | 1s | 1 | r |\n" +
		"\nEquivalent mutants ...\n"
	got, err := spliceRows(table, map[string]string{"b": "| `b` | B. | no | 4 of 5 seeds | 1 | 1s | 1s | 1 | r |"}, "at commit def on 2026-12-06 (load average 1)")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"**3 mutants: the six scenarios catch 1, the state machine 2.** The scenarios miss `b`, `c`.",
		"| `a` | A. | yes: kill_and_recover | yes | 1 | 1s | 1s | 1 | r |\n| `b` | B. | no | 4 of 5 seeds | 1 | 1s | 1s | 1 | r |\n| `c` |",
		laterRowsPrefix + " `b` at commit def on 2026-12-06 (load average 1).",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("spliced table lacks %q:\n%s", want, got)
		}
	}
	again, err := spliceRows(got, map[string]string{
		"b": "| `b` | B. | no | yes | 1 | 1s | 1s | 1 | r |",
		"d": "| `d` | D. | yes: x | yes | 1 | 1s | 1s | 1 | r |",
	}, "at commit fed on 2026-12-07 (load average 2)")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"**4 mutants: the six scenarios catch 2, the state machine 4.** The scenarios miss `b`, `c`.",
		laterRowsPrefix + " `b` at commit fed on 2026-12-07 (load average 2); `d` at commit fed on 2026-12-07 (load average 2).",
	} {
		if !strings.Contains(got+again, want) || !strings.Contains(again, want) {
			t.Errorf("spliced again, the table lacks %q:\n%s", want, again)
		}
	}
	if strings.Count(again, "| `b` |") != 1 {
		t.Errorf("b's row is not replaced in place:\n%s", again)
	}
	if _, err := spliceRows("no table here", map[string]string{"b": "x"}, "now"); err == nil {
		t.Error("a text without the mutant table was spliced")
	}
}
