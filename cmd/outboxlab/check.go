package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/search"
	"github.com/outboxlab/outboxlab/verdict"
)

// checkResult is one protocol's verdict, the JSON object `check --json`
// prints (docs/json.md).
type checkResult = verdict.Result

type checkFlags struct {
	asJSON  bool
	checks  int
	steps   int
	seed    uint64
	faults  bool
	workers int
	shrink  time.Duration
	profile bool
	shard   shardFlag
	report  reportFlag
	waiting bool
	split   bool
	broker  brokerFlags // relay mode (broker.go)
	topo    topologyFlag
	// worker is the command of a worker executable (--worker): each
	// PROTOCOL is then that worker's file (docs/worker-protocol.md).
	worker string
}

func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f checkFlags
	def := machine.Default()
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON object per protocol (docs/json.md)")
	fs.IntVar(&f.checks, "checks", 0, "checks (random programs) per protocol (default: rapid's, 100, or RAPID_CHECKS)")
	fs.IntVar(&f.steps, "steps", 0, "average steps per check (default: rapid's, 30, or RAPID_STEPS)")
	fs.Uint64Var(&f.seed, "seed", 0, "seed of the first check (0: random); a failure prints the seed that reproduces it (docs/verdicts.md)")
	fs.BoolVar(&f.faults, "faults", def.Faults, "inject network faults and server restarts (docs/faults.md)")
	fs.DurationVar(&f.shrink, "shrink-time", 0, "at most this long to shrink a counterexample by replaying it (default 30s; 3m on a topology that crashes or fails over) (docs/verdicts.md)")
	fs.IntVar(&f.workers, "workers", def.MaxWorkers, "at most this many worker processes per check (2 or more)")
	fs.BoolVar(&f.waiting, "waiting", true, "let a complete, retry or renew wait behind another worker's open claim transaction, judged when it ends (false: skip such steps) (docs/races.md)")
	fs.BoolVar(&f.split, "split", true, "run a complete, retry or renew of several statements in two parts, other steps at the statement boundary between (false: run each section whole) (docs/races.md)")
	addReportFlag(fs, &f.report)
	fs.BoolVar(&f.profile, "profile", false, "a verdict per property: each broken one with its own counterexample, found with the others relaxed (docs/libraries.md)")
	fs.Var(&f.shard, "shard", "K/N: run part K of N of the budget, disjoint seed ranges (needs --seed; docs/nightly.md)")
	addTopologyFlag(fs, &f.topo)
	fs.StringVar(&f.worker, "worker", "", "`'CMD ARGS'`: a worker executable in any language runs claim, complete, retry, renew and rescue; each FILE holds the directives and the harness's sections (docs/worker-protocol.md)")
	f.broker.register(fs)
	cf := addConcurrentFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: outboxlab check [flags] [PROTOCOL ...]")
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), checkHelp())
	}
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	if f.checks < 0 || f.steps < 0 || f.workers < 2 {
		fmt.Fprintln(stderr, "outboxlab check: --checks and --steps must be positive and --workers at least 2")
		return exitBad
	}
	if err := f.shard.validate(f.seed); err != nil {
		fmt.Fprintln(stderr, "outboxlab check:", err)
		return exitBad
	}
	if f.worker != "" && len(fs.Args()) == 0 {
		fmt.Fprintln(stderr, "outboxlab check: --worker needs the worker's protocol FILE")
		return exitBad
	}
	if f.worker != "" && f.broker.on {
		fmt.Fprintln(stderr, "outboxlab check: --worker does not run in relay mode: relay mode's workers publish to the broker from Go, and the worker protocol has no publish request (docs/worker-protocol.md)")
		return exitBad
	}
	protocols, err := loadAllWorker(fs.Args(), f.worker)
	if err != nil {
		fmt.Fprintln(stderr, "outboxlab:", err)
		return exitBad
	}
	if err := f.report.prepare(f.profile, len(protocols)); err != nil {
		fmt.Fprintln(stderr, "outboxlab check:", err)
		return exitBad
	}
	if f.broker.on {
		return runBroker(protocols, f, stdout, stderr)
	}
	if err := setRapidFlags(&f); err != nil {
		fmt.Fprintln(stderr, "outboxlab check:", err)
		return exitBad
	}
	if _, err := f.shard.Seeds(f.seed, f.checks); err != nil {
		fmt.Fprintln(stderr, "outboxlab check: --shard:", err)
		return exitBad
	}
	srv, insts, err := installAll(f.topo.Topology, protocols)
	if err != nil {
		fmt.Fprintln(stderr, "outboxlab:", err)
		return exitBad
	}
	defer closeAll(insts)
	if cf.on {
		return runConcurrent(srv, insts, f, cf, stdout, stderr)
	}
	cfg := def
	cfg.Faults = f.faults
	cfg.MaxWorkers = f.workers
	cfg.NoWaitingSteps = !f.waiting
	cfg.NoSplitSteps = !f.split
	if cfg.MinWorkers > cfg.MaxWorkers {
		cfg.MinWorkers = cfg.MaxWorkers
	}
	code := exitPass
	for _, inst := range insts {
		onFailure := func(h *machine.Harness, c search.Catch, res checkResult) {
			writeReport(f.report, h, c, res, stderr)
		}
		res := verdict.Check(srv, inst, verdict.Run{Cfg: cfg, Seed: f.seed, Checks: f.checks, Steps: f.steps, Shard: f.shard.Shard,
			Shrink: f.shrink, Profile: f.profile, Progress: stderr, OnFailure: onFailure})
		code = worseExit(code, res.Result)
		switch {
		case f.asJSON:
			enc := json.NewEncoder(stdout)
			enc.SetEscapeHTML(false)
			enc.Encode(res)
		case f.profile:
			verdict.PrintProfile(stdout, res)
		default:
			verdict.Print(stdout, res)
		}
	}
	return code
}

// setRapidFlags makes rapid's flags usable outside go test and fills in
// the budget: a random seed when none was given, and rapid's own number
// of checks (its flag, or RAPID_CHECKS) when --checks was not.
// verdict.Check puts the budget in rapid's flags for each run and
// restores them.
func setRapidFlags(f *checkFlags) error {
	// rapid consults testing.Short; outside `go test` the testing flags
	// must be registered and parsed first.
	testing.Init()
	if !flag.Parsed() {
		flag.CommandLine.Parse(nil)
	}
	if f.seed == 0 {
		f.seed = rand.Uint64N(1 << 53)
	}
	if f.checks == 0 {
		f.checks, _ = strconv.Atoi(flag.CommandLine.Lookup("rapid.checks").Value.String())
	}
	return nil
}

// worseExit folds one protocol's result into the command's exit status:
// bad input over a counterexample over an inconclusive run over a pass.
func worseExit(code int, result string) int {
	rank := map[int]int{exitPass: 0, exitInconclusive: 1, exitFail: 2, exitBad: 3}
	next := map[string]int{"pass": exitPass, "inconclusive": exitInconclusive, "fail": exitFail, "error": exitBad}[result]
	if rank[next] > rank[code] {
		return next
	}
	return code
}

// checkHelp is the part of check's usage after the flags: the results and
// exit statuses, and the coverage classes a pass needs with the sections
// that make each one required.
func checkHelp() string {
	var b strings.Builder
	b.WriteString(`
Result per protocol (exit status): pass (0); fail, a counterexample (1);
bad input or no database (2); inconclusive (3): no counterexample, but the
run never reached a coverage class the protocol's sections or directives
make possible, so the pass proves nothing there; raise --checks or --steps
(docs/verdicts.md).

Coverage classes a pass needs (with faults on, also request_lost,
reply_lost, and db_restart on a server outboxlab started itself:
docs/faults.md):
`)
	needs := machine.ClassSections()
	for _, class := range append(slices.Clone(machine.BaseClasses), machine.V2Classes...) {
		when := "always"
		if class == machine.CovReclaim {
			when = "unless max_attempts=1 (every expired lease is then a last attempt, to bury)"
		}
		if secs := needs[class]; len(secs) > 0 && strings.ContainsAny(secs[0], "=>_") {
			when = "with the directive " + secs[0]
		} else if len(secs) > 0 {
			when = "with the section(s) " + strings.Join(secs, " and ")
		}
		fmt.Fprintf(&b, "  %-24s %s\n", class, when)
	}
	b.WriteString(`
The protocol file format: docs/protocol-format.md; the counterexample page
of --report: docs/report.md. Every docs/ page is in the outboxlab repository.
`)
	return b.String()
}
