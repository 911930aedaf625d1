package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/bench"
	"github.com/outboxlab/outboxlab/verdict"
)

// TestJSONSchema holds the --json output to docs/json.md: every Go type
// the commands encode has exactly the documented fields, types and
// presence; the exit statuses are the documented ones; and the real
// output of check (a pass cut short, a counterexample, a profile) and of
// scenarios validates against the tables. Two mutants show the checks can
// fail: a result type with a field the document lacks, and an output
// line with a field renamed.
func TestJSONSchema(t *testing.T) {
	docs := readSchemas(t, "../../docs/json.md")
	types := map[string]reflect.Type{
		"check":         reflect.TypeFor[verdict.Result](),
		"profile_entry": reflect.TypeFor[verdict.ProfileEntry](),
		"program":       reflect.TypeFor[verdict.Program](),
		"program_step":  reflect.TypeFor[verdict.ProgramStep](),
		"settings":      reflect.TypeFor[verdict.Settings](),
		"scenario":      reflect.TypeFor[scenarioResult](),
		"concurrent":    reflect.TypeFor[concurrentResult](),
		"bench":         reflect.TypeFor[bench.Figures](),
		"bench_machine": reflect.TypeFor[bench.Machine](),
	}
	for typ, name := range backlogTypes {
		types[name] = typ
	}
	for name, typ := range types {
		if d := diffSchemas(docs[name], typeSchema(typ)); len(d) > 0 {
			t.Errorf("%s (%v) and docs/json.md differ:\n  %s", name, typ, strings.Join(d, "\n  "))
		}
	}
	type resultWithExtraField struct {
		verdict.Result
		Extra string `json:"extra"`
	}
	if d := diffSchemas(docs["check"], typeSchema(reflect.TypeFor[resultWithExtraField]())); len(d) != 1 || !strings.Contains(d[0], "extra") {
		t.Errorf("mutant resultWithExtraField: differences %q, want the one undocumented field", d)
	}

	for _, row := range docs["exit"].rows {
		status, _ := strconv.Atoi(row[0])
		if got := worseExit(exitPass, row[1]); got != status {
			t.Errorf("docs/json.md: exit %d for %s; the command exits %d", status, row[1], got)
		}
	}

	var lines []string
	// One check of 3 steps reaches too few coverage classes to be a pass,
	// whatever the seed draws: leased is inconclusive there.
	lines = append(lines, commandLines(t, "check", "--json", "--checks", "1", "--steps", "3", "--seed", "1", "--faults=false", "leased")...)
	lines = append(lines, commandLines(t, "check", "--json", "--checks", "2", "--seed", "1", "--faults=false", "--shrink-time", "1s", "baseline")...)
	lines = append(lines, commandLines(t, "check", "--json", "--profile", "--checks", "2", "--seed", "1", "--faults=false", "--shrink-time", "1s", "baseline")...)
	withoutUserServer(t) // async-commit is built from local binaries
	lines = append(lines, commandLines(t, "check", "--json", "--topology", "async-commit", "--checks", "2", "--seed", "1", "--faults=false", "--shrink-time", "1s", "baseline")...)
	results := map[string]bool{}
	for _, line := range lines {
		if errs := validateLine(docs, "check", line); len(errs) > 0 {
			t.Errorf("check --json output %s:\n  %s", line, strings.Join(errs, "\n  "))
		}
		var r struct{ Result string }
		json.Unmarshal([]byte(line), &r)
		results[r.Result] = true
	}
	if !results["fail"] || !results["inconclusive"] {
		t.Errorf("results %v: want a fail and an inconclusive run validated", results)
	}
	for _, line := range commandLines(t, "scenarios", "--json", "leased") {
		if errs := validateLine(docs, "scenario", line); len(errs) > 0 {
			t.Errorf("scenarios --json output %s:\n  %s", line, strings.Join(errs, "\n  "))
		}
	}
	for _, line := range commandLines(t, "check", "--concurrent", "--json", "--histories", "1", "--seed", "1", "leased") {
		if errs := validateLine(docs, "concurrent", line); len(errs) > 0 {
			t.Errorf("check --concurrent --json output %s:\n  %s", line, strings.Join(errs, "\n  "))
		}
	}
	renamed := strings.Replace(lines[0], `"protocol":`, `"name":`, 1)
	if errs := validateLine(docs, "check", renamed); len(errs) != 2 {
		t.Errorf("mutant with protocol renamed to name: %q, want name undocumented and protocol missing", errs)
	}
}

// commandLines runs the command and returns its output lines; an exit
// status that is not the one its results call for fails the test.
func commandLines(t *testing.T, args ...string) []string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	if code == exitBad {
		t.Fatalf("%v: exit 2: %s", args, stderr.String())
	}
	return strings.Split(strings.TrimSpace(stdout.String()), "\n")
}

// field is one documented field: its type and presence.
type field struct{ typ, present string }

type schema struct {
	fields map[string]field
	rows   [][]string // the table's cells, for the exit table
}

// readSchemas reads each table after a "<!-- schema: NAME -->" line.
func readSchemas(t *testing.T, path string) map[string]schema {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]schema{}
	name := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if n, ok := strings.CutPrefix(line, "<!-- schema: "); ok {
			name = strings.TrimSuffix(n, " -->")
			out[name] = schema{fields: map[string]field{}}
			continue
		}
		if name == "" || !strings.HasPrefix(line, "|") {
			if line == "" || !strings.HasPrefix(line, "|") {
				name = ""
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.Trim(strings.TrimSpace(cells[i]), "`")
		}
		if cells[0] == "field" || cells[0] == "status" || strings.HasPrefix(cells[0], "---") {
			continue
		}
		s := out[name]
		s.rows = append(s.rows, cells)
		if len(cells) >= 3 {
			s.fields[cells[0]] = field{typ: cells[1], present: cells[2]}
		}
		out[name] = s
	}
	if len(out) < 6 {
		t.Fatalf("%s: %d schema tables, want check, profile_entry, scenario, bench, bench_machine and exit", path, len(out))
	}
	return out
}

// typeSchema is what encoding/json writes for a struct type: each field's
// name, JSON type and presence (omitempty: when set).
func typeSchema(typ reflect.Type) schema {
	s := schema{fields: map[string]field{}}
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Anonymous {
			for k, v := range typeSchema(f.Type).fields {
				s.fields[k] = v
			}
			continue
		}
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		present := "always"
		if strings.Contains(opts, "omitempty") {
			present = "when set"
		}
		s.fields[name] = field{typ: jsonType(f.Type), present: present}
	}
	return s
}

// namedTypes are the struct types documented in tables of their own.
var namedTypes = map[reflect.Type]string{
	reflect.TypeFor[verdict.ProfileEntry](): "profile_entry",
	reflect.TypeFor[verdict.Program]():      "program",
	reflect.TypeFor[verdict.ProgramStep]():  "program_step",
	reflect.TypeFor[verdict.Settings]():     "settings",
	reflect.TypeFor[bench.Machine]():        "bench_machine",
}

// backlogTypes are bench --backlog --json's, each with its table.
var backlogTypes = map[reflect.Type]string{
	reflect.TypeFor[bench.Backlog]():         "backlog",
	reflect.TypeFor[bench.ProtocolBacklog](): "backlog_protocol",
	reflect.TypeFor[bench.SizeResult]():      "backlog_size",
	reflect.TypeFor[bench.Setup]():           "backlog_setup",
	reflect.TypeFor[bench.Latency]():         "backlog_latency",
	reflect.TypeFor[bench.Plan]():            "backlog_plan",
	reflect.TypeFor[bench.ScanNode]():        "backlog_scan",
	reflect.TypeFor[bench.Pgbench]():         "backlog_pgbench",
	reflect.TypeFor[bench.Churn]():           "backlog_churn",
	reflect.TypeFor[bench.Tables]():          "backlog_tables",
}

func init() {
	for typ, name := range backlogTypes {
		namedTypes[typ] = name
	}
}

func jsonType(t reflect.Type) string {
	if name, ok := namedTypes[t]; ok {
		return name
	}
	switch t.Kind() {
	case reflect.Pointer:
		return jsonType(t.Elem()) // nil only where omitempty leaves it out
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice:
		return "array of " + jsonType(t.Elem())
	case reflect.Map:
		return "object of " + jsonType(t.Elem())
	}
	return "undocumented " + t.String()
}

// diffSchemas lists the fields the document and the code disagree on.
func diffSchemas(doc, code schema) []string {
	var out []string
	for name, c := range code.fields {
		d, ok := doc.fields[name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s (%s, %s) is not documented", name, c.typ, c.present))
		case d != c:
			out = append(out, fmt.Sprintf("%s is documented as %s, %s; the code has %s, %s", name, d.typ, d.present, c.typ, c.present))
		}
	}
	for name := range doc.fields {
		if _, ok := code.fields[name]; !ok {
			out = append(out, fmt.Sprintf("%s is documented but not in the code", name))
		}
	}
	sort.Strings(out)
	return out
}

// validateLine checks one line of real output against the table name:
// every field documented, of its type, and every "always" field there.
func validateLine(docs map[string]schema, name, line string) []string {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return []string{err.Error()}
	}
	return validate(docs, name, v, name)
}

func validate(docs map[string]schema, typ string, v any, at string) []string {
	switch elem, ok := strings.CutPrefix(typ, "array of "); {
	case ok:
		a, isArray := v.([]any)
		if !isArray {
			return []string{at + ": not an array"}
		}
		var errs []string
		for i, e := range a {
			errs = append(errs, validate(docs, elem, e, fmt.Sprintf("%s[%d]", at, i))...)
		}
		return errs
	}
	if elem, ok := strings.CutPrefix(typ, "object of "); ok {
		m, isObject := v.(map[string]any)
		if !isObject {
			return []string{at + ": not an object"}
		}
		var errs []string
		for k, e := range m {
			errs = append(errs, validate(docs, elem, e, at+"."+k)...)
		}
		return errs
	}
	ok := false
	switch typ {
	case "string":
		_, ok = v.(string)
	case "boolean":
		_, ok = v.(bool)
	case "number":
		_, ok = v.(json.Number)
	case "integer":
		n, isNumber := v.(json.Number)
		_, err := strconv.ParseUint(string(n), 10, 64)
		ok = isNumber && err == nil
	default:
		return validateObject(docs, typ, v, at)
	}
	if !ok {
		return []string{fmt.Sprintf("%s: %v is not a %s", at, v, typ)}
	}
	return nil
}

func validateObject(docs map[string]schema, name string, v any, at string) []string {
	s, known := docs[name]
	m, isObject := v.(map[string]any)
	if !known || !isObject {
		return []string{fmt.Sprintf("%s: not a %s object", at, name)}
	}
	var errs []string
	for k, e := range m {
		f, documented := s.fields[k]
		if !documented {
			errs = append(errs, fmt.Sprintf("%s.%s is not documented", at, k))
			continue
		}
		errs = append(errs, validate(docs, f.typ, e, at+"."+k)...)
	}
	for k, f := range s.fields {
		if _, there := m[k]; !there && f.present == "always" {
			errs = append(errs, fmt.Sprintf("%s.%s is missing", at, k))
		}
	}
	sort.Strings(errs)
	return errs
}
