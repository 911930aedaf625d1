package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestBacklogJSON runs `outboxlab bench --backlog --json` at 10^3 and 10^4
// events, briefly: the object has per-size figures (mix, latency from 1 and
// 4 connections, plan and verdict, pgbench's run of the same claim), growth
// and the churn's before and after, and --svg writes the plot of p50 and
// p99 beside it. It judges no figure, and checks that the pgbench run left
// no temporary directory behind.
func TestBacklogJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	svg := filepath.Join(t.TempDir(), "backlog.svg")
	args := []string{"bench", "--backlog", "--json", "--svg", svg, "--sizes", "1e3,1e4", "--for", "100ms", "--churn", "500ms", "leased"}
	if code := run(args, &stdout, &stderr); code != exitPass {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	var got struct {
		Protocols []struct {
			Protocol string
			Growth   float64
			Verdict  string
			Sizes    []struct {
				Events  int
				Mix     map[string]int
				Latency []struct {
					Connections int
					P50US       float64 `json:"p50_us"`
					ClaimsPerS  float64 `json:"claims_per_s"`
				}
				Plan struct {
					KeyLine string `json:"key_line"`
				}
				Pgbench *struct {
					P50US    float64 `json:"p50_us"`
					P50Ratio float64 `json:"p50_ratio"`
				}
			}
			Churn *struct {
				Cycles        int
				AfterKeyLine  string `json:"after_key_line"`
				Before, After struct {
					DeadTuples *int64 `json:"n_dead_tup"`
					Bytes      int64  `json:"total_bytes"`
				}
			}
		}
		Machine map[string]any
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("not one JSON object: %v\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	// Every field as docs/json.md documents it (the churn and pgbench
	// objects included: both run here).
	if errs := validateLine(readSchemas(t, "../../docs/json.md"), "backlog", stdout.String()); len(errs) > 0 {
		t.Errorf("bench --backlog --json output and docs/json.md differ:\n  %s", strings.Join(errs, "\n  "))
	}
	if len(got.Protocols) != 1 || got.Protocols[0].Protocol != "leased" {
		t.Fatalf("protocols: %+v", got.Protocols)
	}
	p := got.Protocols[0]
	if !(p.Growth > 0) || p.Verdict == "" || len(p.Sizes) != 2 || p.Sizes[0].Events != 1000 || p.Sizes[1].Events != 10000 {
		t.Fatalf("growth %v, verdict %q, sizes %+v", p.Growth, p.Verdict, p.Sizes)
	}
	for _, s := range p.Sizes {
		if s.Mix["sent"] != s.Events*9/10 || len(s.Latency) != 2 || s.Plan.KeyLine == "" {
			t.Errorf("at %d: mix %v, %d latencies, key line %q", s.Events, s.Mix, len(s.Latency), s.Plan.KeyLine)
		}
		for _, l := range s.Latency {
			if !(l.P50US > 0) || !(l.ClaimsPerS > 0) {
				t.Errorf("at %d from %d connections: %+v", s.Events, l.Connections, l)
			}
		}
		if s.Pgbench == nil || !(s.Pgbench.P50US > 0) || !(s.Pgbench.P50Ratio > 0) {
			t.Errorf("at %d: pgbench %+v", s.Events, s.Pgbench)
		}
	}
	if c := p.Churn; c == nil || c.Cycles == 0 || c.Before.DeadTuples == nil || c.After.Bytes == 0 || c.AfterKeyLine == "" {
		t.Errorf("churn %+v", p.Churn)
	}
	if got.Machine["postgres"] == nil {
		t.Errorf("machine %v", got.Machine)
	}
	// The plot: one p50 and one p99 line, of two points each.
	if b, err := os.ReadFile(svg); err != nil {
		t.Errorf("--svg: %v", err)
	} else if lines, names := strings.Count(string(b), "<polyline"), strings.Count(string(b), ">leased p"); lines != 2 || names != 2 || strings.Count(string(b), "<circle") != 4 {
		t.Errorf("--svg: %d lines, %d named leased, %d points; want 2, 2 and 4", lines, names, strings.Count(string(b), "<circle"))
	}
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), "outboxlab-pgbench-"+strconv.Itoa(os.Getpid())+"-*"))
	for _, d := range left {
		t.Errorf("pgbench's directory %s outlived the run", d)
	}
}

// TestBacklogBadInput: a protocol that is not there, one the backlog
// cannot mix, and bad flags exit 2 with the reason, before anything is
// measured.
func TestBacklogBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"no-such-protocol"}, `protocol "no-such-protocol": not a built-in`},
		{[]string{"../../testdata/libraries/pg-boss.sql"}, "../../testdata/libraries/pg-boss.sql: no backlog mix for its tables (job)"},
		{[]string{"--sizes", "1e3,lots"}, `--sizes: "lots" is not a whole number of events`},
		{[]string{"--sizes", "100"}, "--sizes: 100 events: a backlog has from 200 events"},
		{[]string{"--sizes", "1e4,1e3"}, "--sizes: 1e3 after 10000: sizes go in ascending order"},
		{[]string{"--sizes", "1234.5"}, `--sizes: "1234.5" is not a whole number`},
		{[]string{"--for", "0s"}, "--for must be positive"},
		{[]string{"--svg", "no-such-dir/backlog.svg"}, "--svg no-such-dir/backlog.svg: no directory no-such-dir"},
		{[]string{"--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"bench", "--backlog"}, c.args...), &stdout, &stderr)
		if code != exitBad || !strings.Contains(stderr.String(), c.want) || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 and %q", c.args, code, stderr.String(), stdout.String(), c.want)
		}
	}
	// Without --backlog, bench still takes no protocol.
	var stdout, stderr bytes.Buffer
	if code := run([]string{"bench", "leased"}, &stdout, &stderr); code != exitBad || !strings.Contains(stderr.String(), "takes no protocol") {
		t.Errorf("bench leased: exit %d, stderr %q", code, stderr.String())
	}
}

// TestBacklogHelp: the mode's own flags, on stdout, exit 0.
func TestBacklogHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"bench", "--backlog", "-h"}, &stdout, &stderr); code != exitPass || stderr.Len() != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	for _, w := range []string{"usage: outboxlab bench --backlog", "-sizes", "-for", "-churn", "-pgbench", "-json", "default: leased"} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("stdout %q does not contain %q", stdout.String(), w)
		}
	}
}
