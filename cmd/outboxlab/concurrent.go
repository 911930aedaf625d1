package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/outboxlab/outboxlab/concurrent"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/verdict"
)

// concurrentFlags are `check --concurrent` and its budget.
type concurrentFlags struct {
	on        bool
	histories int
	ops       int
	workers   int
	duration  time.Duration
	html      string
}

func addConcurrentFlags(fs *flag.FlagSet) *concurrentFlags {
	def := concurrent.Default()
	cf := &concurrentFlags{}
	fs.BoolVar(&cf.on, "concurrent", false, "concurrent mode: worker processes at once, each history checked for linearizability (porcupine) (docs/concurrent.md)")
	fs.IntVar(&cf.histories, "histories", def.Histories, "with --concurrent (docs/concurrent.md): histories per protocol")
	fs.IntVar(&cf.ops, "ops", def.Ops, "with --concurrent (docs/concurrent.md): operations per history")
	fs.IntVar(&cf.workers, "concurrent-workers", def.Workers, "with --concurrent (docs/concurrent.md): worker processes (2 or more)")
	fs.DurationVar(&cf.duration, "duration", def.Duration, "with --concurrent (docs/concurrent.md): the longest a protocol's run may take")
	fs.StringVar(&cf.html, "html-dir", "", "with --concurrent (docs/concurrent.md): where a failing history's HTML goes (default: the temp dir)")
	return cf
}

// concurrentResult is one protocol's verdict in concurrent mode, the JSON
// object `check --concurrent --json` prints.
type concurrentResult struct {
	Protocol       string         `json:"protocol"`
	Topology       string         `json:"topology"` // as for check --json
	Result         string         `json:"result"`   // pass, fail or error
	Seed           uint64         `json:"seed"`
	Histories      int            `json:"histories"`
	Ops            int            `json:"ops"`
	Undecided      int            `json:"undecided,omitempty"`
	Seconds        float64        `json:"seconds"`
	Violation      string         `json:"violation"`
	Broken         string         `json:"broken,omitempty"` // the model's rule the shrunk part breaks, when one is named
	Detail         string         `json:"detail,omitempty"`
	Counterexample []string       `json:"counterexample"`
	HTML           string         `json:"html,omitempty"`
	Witness        []string       `json:"witness,omitempty"`
	WitnessHTML    string         `json:"witness_html,omitempty"`
	Faults         map[string]int `json:"faults,omitempty"`
	Error          string         `json:"error,omitempty"`
}

func runConcurrent(srv *pgserver.Server, insts []*sut.Instance, f checkFlags, cf *concurrentFlags, stdout, stderr io.Writer) int {
	if cf.histories < 1 || cf.ops < 1 || cf.workers < 2 || cf.duration <= 0 {
		fmt.Fprintln(stderr, "outboxlab check: --histories, --ops and --duration must be positive and --concurrent-workers at least 2")
		return exitBad
	}
	cfg := concurrent.Default()
	cfg.Histories, cfg.Ops, cfg.Workers, cfg.Duration = cf.histories, cf.ops, cf.workers, cf.duration
	cfg.Faults, cfg.Seed, cfg.HTMLDir = f.faults, f.seed, cf.html
	code := exitPass
	for _, inst := range insts {
		res := concurrentOne(srv, inst, cfg)
		code = worseExit(code, res.Result)
		if f.asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetEscapeHTML(false)
			enc.Encode(res)
			continue
		}
		printConcurrent(stdout, res)
	}
	return code
}

func concurrentOne(srv *pgserver.Server, inst *sut.Instance, cfg concurrent.Config) concurrentResult {
	res := concurrentResult{Protocol: inst.Proto.Name, Topology: verdict.TopologyOf(srv), Seed: cfg.Seed, Counterexample: []string{}}
	start := time.Now()
	r, err := concurrent.NewRunner(srv, inst, cfg)
	if err != nil {
		res.Result, res.Error = "error", err.Error()
		return res
	}
	defer r.Close()
	out := r.Run()
	res.Seconds = time.Since(start).Seconds()
	res.Histories, res.Ops, res.Undecided, res.Faults = out.Histories, out.Ops, out.Undecided, out.Faults
	switch v := out.Failure; {
	case v == nil:
		res.Result = "pass"
	case v.Rule == "harness error":
		res.Result, res.Error = "error", v.Detail
	default:
		res.Result, res.Violation, res.Detail, res.Counterexample, res.HTML = "fail", v.Rule, v.Detail, v.Ops, v.HTML
		res.Broken = v.Broken
		res.Witness, res.WitnessHTML = v.Witness, v.WitnessHTML
		res.Histories = v.History
	}
	return res
}

func printConcurrent(w io.Writer, r concurrentResult) {
	name := verdict.Label(r.Protocol, r.Topology)
	switch r.Result {
	case "pass":
		fmt.Fprintf(w, "%s: pass: %d histories, %d operations, every one linearizable (%.1fs, seed %d)\n", name, r.Histories, r.Ops, r.Seconds, r.Seed)
		if r.Undecided > 0 {
			fmt.Fprintf(w, "  %d histories undecided: the checker ran out of time on them\n", r.Undecided)
		}
	case "fail":
		violation := r.Violation
		if r.Broken != "" {
			violation += ": " + r.Broken
		}
		fmt.Fprintf(w, "%s: FAIL: %s (history %d, %.1fs including shrinking, seed %d)\n", name, violation, r.Histories, r.Seconds, r.Seed)
		part := "failing part of the history (shrunk; call .. return, ms)"
		if len(r.Witness) == 0 {
			part = "the history up to the failure (call .. return, ms)"
		}
		fmt.Fprintf(w, "  %s\n  %s:\n", r.Detail, part)
		for _, line := range r.Counterexample {
			fmt.Fprintln(w, "    "+line)
		}
		if r.HTML != "" {
			fmt.Fprintf(w, "  as HTML: %s\n", r.HTML)
		}
		if len(r.Witness) > 0 {
			fmt.Fprintf(w, "  searched from a failing prefix of %d operations (every operation left out starts after it ends, so it fails on its own): %s\n", len(r.Witness), r.WitnessHTML)
		}
	default:
		fmt.Fprintf(w, "%s: ERROR: %s\n", name, r.Error)
		return
	}
	if len(r.Faults) > 0 {
		var parts []string
		for k, n := range r.Faults {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(parts)
		fmt.Fprintf(w, "  faults injected: %s\n", strings.Join(parts, ", "))
	}
}
