package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCheckReport: `check --report FILE baseline` fails, writes the page
// of its counterexample there with the rule at the violating step, and
// prints the path.
func TestCheckReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.html")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"check", "--faults=false", "--checks", "100", "--steps", "30", "--seed", "4721420954342791", "--report", path, "baseline"}, &stdout, &stderr); code != exitFail {
		t.Fatalf("exit %d, want 1; stderr: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "baseline: report: "+path+"\n") {
		t.Errorf("stderr does not print the report's path: %q", stderr.String())
	}
	m := regexp.MustCompile(`baseline: FAIL: (.*) \(found at`).FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("no FAIL line: %s", stdout.String())
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	violation := regexp.MustCompile(`(?s)id="violation".*?</tbody>`).Find(page)
	if violation == nil || !bytes.Contains(violation, []byte(strings.ReplaceAll(m[1], "'", "&#39;"))) {
		t.Errorf("the page's violating step does not carry the rule %q:\n%s", m[1], violation)
	}
}

// TestCheckReportBadFlag: a report into a directory that does not exist,
// or with --profile, is bad input: exit 2 before anything runs.
func TestCheckReportBadFlag(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no", "r.html")
	for _, args := range [][]string{{"check", "--report", missing, "baseline"}, {"check", "--profile", "--report", "r.html", "baseline"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != exitBad || !strings.Contains(stderr.String(), "--report") || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want 2 and a --report message", args, code, stderr.String(), stdout.String())
		}
	}
}

// TestReportFilePerProtocol: with several protocols each failure gets its
// own file.
func TestReportFilePerProtocol(t *testing.T) {
	one, many := reportFlag{path: "/tmp/r.html"}, reportFlag{path: "/tmp/r.html", perProtocol: true}
	if one.file("baseline") != "/tmp/r.html" || many.file("baseline") != "/tmp/r-baseline.html" || many.file("testdata/m.sql") != "/tmp/r-testdata_m.sql.html" {
		t.Errorf("files %q %q %q", one.file("baseline"), many.file("baseline"), many.file("testdata/m.sql"))
	}
}
