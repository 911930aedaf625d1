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
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/search"
	"github.com/outboxlab/outboxlab/sut"
)

// checkResult is one protocol's verdict, the JSON object `check --json` prints.
type checkResult struct {
	Protocol       string   `json:"protocol"`
	Result         string   `json:"result"` // pass, fail, inconclusive or error
	Seed           uint64   `json:"seed"`
	Checks         int      `json:"checks"`
	Steps          int      `json:"steps"`
	Seconds        float64  `json:"seconds"`
	Violation      string   `json:"violation"`
	Counterexample []string `json:"counterexample"`
	// CounterexampleSteps counts the shrunk program's steps, the drain's
	// included (machine.CountSteps).
	CounterexampleSteps int            `json:"counterexample_steps,omitempty"`
	Reproduce           string         `json:"reproduce,omitempty"`
	Coverage            map[string]int `json:"coverage"`
	Uncovered           []string       `json:"uncovered,omitempty"`     // required classes never reached: the result is inconclusive
	NotExercised        []string       `json:"not_exercised,omitempty"` // what this protocol's sections leave out of every check
	Error               string         `json:"error,omitempty"`
	// Profile is set by --profile: a verdict per property. ProfileStopped
	// names the failure of no property that ended it, if one did.
	Profile        []profileEntry `json:"profile,omitempty"`
	ProfileStopped string         `json:"profile_stopped,omitempty"`
}

type checkFlags struct {
	asJSON  bool
	checks  int
	steps   int
	seed    uint64
	faults  bool
	workers int
	shrink  time.Duration
	profile bool
}

func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f checkFlags
	def := machine.Default()
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON object per protocol")
	fs.IntVar(&f.checks, "checks", 0, "checks (random programs) per protocol (default: rapid's, 100, or RAPID_CHECKS)")
	fs.IntVar(&f.steps, "steps", 0, "average steps per check (default: rapid's, 30, or RAPID_STEPS)")
	fs.Uint64Var(&f.seed, "seed", 0, "seed of the first check (0: random); a failure prints the seed that reproduces it")
	fs.BoolVar(&f.faults, "faults", def.Faults, "inject network faults and server restarts")
	fs.DurationVar(&f.shrink, "shrink-time", 0, "at most this long for rapid's shrinking, used when a counterexample cannot be replayed (default 30s)")
	fs.IntVar(&f.workers, "workers", def.MaxWorkers, "at most this many worker processes per check (2 or more)")
	fs.BoolVar(&f.profile, "profile", false, "a verdict per property: each broken one with its own counterexample, found with the others relaxed")
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
	protocols, err := loadAll(fs.Args())
	if err != nil {
		fmt.Fprintln(stderr, "outboxlab:", err)
		return exitBad
	}
	if err := setRapidFlags(&f); err != nil {
		fmt.Fprintln(stderr, "outboxlab check:", err)
		return exitBad
	}
	srv, insts, err := installAll(protocols)
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
	if cfg.MinWorkers > cfg.MaxWorkers {
		cfg.MinWorkers = cfg.MaxWorkers
	}
	code := exitPass
	for _, inst := range insts {
		var res checkResult
		if f.profile {
			res = profileOne(srv, inst, cfg, f, stderr)
		} else {
			res = checkOne(srv, inst, cfg, f, stderr)
		}
		code = worseExit(code, res.Result)
		switch {
		case f.asJSON:
			enc := json.NewEncoder(stdout)
			enc.SetEscapeHTML(false)
			enc.Encode(res)
		case f.profile:
			printProfile(stdout, res)
		default:
			printResult(stdout, res)
		}
	}
	return code
}

// setRapidFlags passes the budget to rapid through its own flags; rapid
// reads them when a check starts.
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
	set := map[string]string{"rapid.seed": strconv.FormatUint(f.seed, 10), "rapid.nofailfile": "true"}
	if f.checks > 0 {
		set["rapid.checks"] = strconv.Itoa(f.checks)
	}
	if f.steps > 0 {
		set["rapid.steps"] = strconv.Itoa(f.steps)
	}
	for k, v := range set {
		if err := flag.CommandLine.Set(k, v); err != nil {
			return fmt.Errorf("set %s: %w", k, err)
		}
	}
	if f.checks == 0 {
		f.checks, _ = strconv.Atoi(flag.CommandLine.Lookup("rapid.checks").Value.String())
	}
	return nil
}

func checkOne(srv *pgserver.Server, inst *sut.Instance, cfg machine.Config, f checkFlags, stderr io.Writer) checkResult {
	res := checkResult{Protocol: inst.Proto.Name, Seed: f.seed, Counterexample: []string{}, NotExercised: notExercised(inst.Proto)}
	h, done, err := startHarness(srv, inst, cfg)
	if err != nil {
		res.Result, res.Error = "error", err.Error()
		return res
	}
	defer done()
	stop := showProgress(h, inst.Proto.Name, f.checks, stderr)
	start := time.Now()
	c := search.On(h).Search("outboxlab check "+inst.Proto.Name, f.shrink)
	stop()
	checks, steps, _ := h.Stats()
	res.Checks, res.Steps, res.Seconds = checks, steps, time.Since(start).Seconds()
	res.Coverage = h.Coverage.Counts()
	required := machine.RequiredClasses(cfg, inst.Proto.Policy(), inst.Proto.Has, srv.Owned())
	switch v := c.Failure; {
	case !c.Caught:
		res.Result = "pass"
		if res.Uncovered = h.Coverage.Missing(required); len(res.Uncovered) > 0 {
			res.Result = "inconclusive"
		}
	case v != nil:
		res.Result = "fail"
		res.Violation = v.Rule
		res.Counterexample = c.Program
		res.CounterexampleSteps = c.Steps()
		res.Checks = c.Checks
		res.Reproduce = reproduceCommand(inst.Proto, c.FailingSeed(f.seed), cfg)
	default:
		res.Result = "error"
		res.Error = firstLine(c.Report)
	}
	return res
}

// startHarness is a harness for one protocol, with the faults attached
// when cfg has them; done closes both.
func startHarness(srv *pgserver.Server, inst *sut.Instance, cfg machine.Config) (h *machine.Harness, done func(), err error) {
	h = machine.New(srv, inst, cfg)
	if !cfg.Faults {
		return h, h.Close, nil
	}
	detach, err := h.AttachFaults()
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	return h, func() { detach(); h.Close() }, nil
}

func reproduceCommand(p *sut.Protocol, seed uint64, cfg machine.Config) string {
	arg := p.Name
	if !strings.HasPrefix(p.File, "builtin/") {
		arg = p.File
	}
	cmd := fmt.Sprintf("outboxlab check --checks 1 --seed %d", seed)
	if !cfg.Faults {
		cmd += " --faults=false"
	}
	return cmd + " " + arg
}

func printResult(w io.Writer, r checkResult) {
	switch r.Result {
	case "pass":
		fmt.Fprintf(w, "%s: pass (%d checks, %d steps, %.1fs, seed %d)\n", r.Protocol, r.Checks, r.Steps, r.Seconds, r.Seed)
	case "inconclusive":
		fmt.Fprintf(w, "%s: INCONCLUSIVE: no counterexample, but the run never exercised %s (%d checks, %d steps, seed %d): raise --checks or --steps\n",
			r.Protocol, strings.Join(r.Uncovered, ", "), r.Checks, r.Steps, r.Seed)
	case "fail":
		fmt.Fprintf(w, "%s: FAIL: %s (found at check %d, %.1fs including shrinking)\n", r.Protocol, r.Violation, r.Checks, r.Seconds)
		fmt.Fprintln(w, "  counterexample (shrunk):")
		for _, line := range r.Counterexample {
			fmt.Fprintln(w, "    "+line)
		}
		fmt.Fprintf(w, "  broken invariant: %s\n  reproduce: %s\n", r.Violation, r.Reproduce)
	default:
		fmt.Fprintf(w, "%s: ERROR: %s\n", r.Protocol, r.Error)
		return
	}
	fmt.Fprintln(w, "  coverage:")
	for _, k := range sortedKeys(r.Coverage) {
		fmt.Fprintf(w, "    %-24s %7d\n", k, r.Coverage[k])
	}
	for _, n := range r.NotExercised {
		fmt.Fprintf(w, "  not exercised: %s\n", n)
	}
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

// notExercised says what a protocol's sections leave out of every check,
// so that a pass is read for what it covers.
func notExercised(p *sut.Protocol) []string {
	var out []string
	if !p.Has(sut.Age) {
		out = append(out, "lease length and renewal effect: the protocol has no age section (and no outbox_lab table for the default)")
	}
	if !p.Has(sut.Renew) {
		out = append(out, "renewal: the protocol has no renew section")
	}
	return out
}

// showProgress prints checks done and steps per second every few seconds
// on stderr, for long runs; the returned func stops it.
func showProgress(h *machine.Harness, name string, total int, w io.Writer) func() {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(3 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				checks, steps, elapsed := h.Stats()
				rate := float64(steps) / max(elapsed.Seconds(), 1e-9)
				if h.Failure() != nil || checks > total {
					fmt.Fprintf(w, "%s: shrinking a counterexample, %d runs, %.0f steps/s\n", name, checks, rate)
					continue
				}
				fmt.Fprintf(w, "%s: %d/%d checks, %d steps, %.0f steps/s\n", name, checks, total, steps, rate)
			}
		}
	}()
	return func() { close(done) }
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
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
make possible, so the pass proves nothing there; raise --checks or --steps.

Coverage classes a pass needs (with faults on, also request_lost,
reply_lost, and db_restart on a server outboxlab started itself):
`)
	needs := machine.ClassSections()
	for _, class := range append(slices.Clone(machine.BaseClasses), machine.V2Classes...) {
		when := "always"
		if secs := needs[class]; len(secs) > 0 && strings.ContainsAny(secs[0], "=>_") {
			when = "with the directive " + secs[0]
		} else if len(secs) > 0 {
			when = "with the section(s) " + strings.Join(secs, " and ")
		}
		fmt.Fprintf(&b, "  %-24s %s\n", class, when)
	}
	b.WriteString("\nThe protocol file format: docs/protocol-format.md in the outboxlab repository.\n")
	return b.String()
}
