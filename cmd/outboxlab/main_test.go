package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/worker"
)

func TestMain(m *testing.M) {
	worker.MainIfWorker()
	os.Exit(func() int {
		defer pgserver.CloseShared()
		return m.Run()
	}())
}

// TestBadProtocolExitsTwo: every malformed protocol file, text-level or
// found by the server, is reported as FILE:LINE with exit status 2 before
// anything runs. Each file's first line says what must be reported.
func TestBadProtocolExitsTwo(t *testing.T) {
	files, _ := filepath.Glob("testdata/bad/*.sql")
	more, _ := filepath.Glob("../../sut/testdata/bad/*.sql")
	files = append(files, more...)
	if len(files) < 8 {
		t.Fatalf("found %d bad protocol files, want the whole set", len(files))
	}
	for _, file := range files {
		for _, cmd := range []string{"scenarios", "check"} {
			t.Run(cmd+"/"+filepath.Base(file), func(t *testing.T) {
				want := wantLine(t, file)
				var stdout, stderr bytes.Buffer
				code := run([]string{cmd, file}, &stdout, &stderr)
				if code != exitBad {
					t.Fatalf("exit %d, want 2; stderr: %s", code, stderr.String())
				}
				if !strings.Contains(stderr.String(), file+":"+want) {
					t.Fatalf("stderr %q does not report %q", stderr.String(), file+":"+want)
				}
				if stdout.Len() != 0 {
					t.Fatalf("something ran: stdout %q", stdout.String())
				}
			})
		}
	}
}

func wantLine(t *testing.T, file string) string {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	want, ok := strings.CutPrefix(sc.Text(), "-- want: ")
	if !ok {
		t.Fatalf("%s: first line must be '-- want: LINE: message'", file)
	}
	return want
}

// TestBadInvocationExitsTwo: unknown commands, flags and protocols.
func TestBadInvocationExitsTwo(t *testing.T) {
	for _, args := range [][]string{{}, {"frobnicate"}, {"check", "--no-such-flag"}, {"check", "--workers", "1"}, {"scenarios", "no-such-protocol"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != exitBad {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
		if stderr.Len() == 0 {
			t.Errorf("%v: no message on stderr", args)
		}
	}
}

// TestScenariosJSON: the article's table from the command line: leased
// passes six of six, baseline fails four and passes two, exit status 1.
func TestScenariosJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"scenarios", "--json", "leased", "baseline"}, &stdout, &stderr)
	if code != exitFail {
		t.Fatalf("exit %d, want 1 (baseline fails); stderr %s", code, stderr.String())
	}
	counts := map[string]map[string]int{}
	dec := json.NewDecoder(&stdout)
	for dec.More() {
		var r struct{ Protocol, Scenario, Result string }
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		if counts[r.Protocol] == nil {
			counts[r.Protocol] = map[string]int{}
		}
		counts[r.Protocol][r.Result]++
	}
	if counts["leased"]["pass"] != 6 || counts["leased"]["fail"] != 0 {
		t.Errorf("leased: %v, want 6 pass", counts["leased"])
	}
	if counts["baseline"]["pass"] != 2 || counts["baseline"]["fail"] != 4 {
		t.Errorf("baseline: %v, want 4 fail and 2 pass", counts["baseline"])
	}
	stdout.Reset()
	if code := run([]string{"scenarios", "leased"}, &stdout, &stderr); code != exitPass {
		t.Errorf("scenarios leased: exit %d, want 0", code)
	}
}
