package verdict

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/search"
	"github.com/outboxlab/outboxlab/sut"
)

// Run is one protocol's search: the machine's configuration and the budget.
type Run struct {
	Cfg machine.Config
	// Seed is the seed of the first check of the whole budget (not 0).
	Seed uint64
	// Checks is the whole budget in checks, before sharding, as rapid runs
	// them (under -short, what is left after rapid's division by 5).
	Checks int
	// Steps is rapid.steps, the average steps per check (0: rapid's flag as it is).
	Steps int
	// Shard is the part of the budget this run takes (zero: all of it).
	Shard search.Shard
	// Shrink bounds the shrinking of a counterexample by replay (0: 30s,
	// or 3m on a topology that crashes or fails over).
	Shrink time.Duration
	// Profile asks for a verdict per property instead of one.
	Profile bool
	// Progress, when set, gets a line on the search every few seconds.
	Progress io.Writer
	// OnFailure, when set, is called with the harness, the shrunk
	// counterexample of a failed check and its result (the reproduce line
	// filled in) before the harness closes: the hook for artefacts written
	// from a replay, such as a report.
	OnFailure func(h *machine.Harness, c search.Catch, res Result)
}

// Check runs the search (or the profile) on an installed protocol. rapid's
// flags must be usable (under go test, or after testing.Init and flag
// parsing); Check sets the budget in them and restores them.
func Check(srv *pgserver.Server, inst *sut.Instance, r Run) Result {
	res := Result{Protocol: inst.Proto.Name, Topology: TopologyOf(srv), Seed: r.Seed, Counterexample: []string{}, Coverage: map[string]int{},
		NotExercised: NotExercised(inst.Proto)}
	if !r.Shard.Whole() {
		res.Shard = r.Shard.String()
	}
	seeds, err := r.seeds()
	if err != nil {
		res.Result, res.Error = Error, err.Error()
		return res
	}
	h, done, err := startHarness(srv, inst, r.Cfg)
	if err != nil {
		res.Result, res.Error = Error, err.Error()
		return res
	}
	defer done()
	s := search.Searcher{Harness: h, Seeds: seeds, Flags: r.flags()}
	stop := showProgress(h, inst.Proto.Name, r.shardChecks(), r.Progress)
	start := time.Now()
	if r.Profile {
		res = profile(s, r, res)
	} else {
		res = check(s, r, res)
	}
	stop()
	res.Seconds = time.Since(start).Seconds()
	return res
}

func check(s search.Searcher, r Run, res Result) Result {
	c := s.Search("outboxlab check "+s.Inst.Proto.Name, r.Shrink)
	res.Checks, res.Steps, _ = s.Stats()
	res.Coverage = s.Coverage.Counts()
	required := machine.RequiredClasses(r.Cfg, s.Inst.Proto.Policy(), s.Inst.Proto.Has, s.Srv.Fault() != pgserver.FaultNone)
	switch v := c.Failure; {
	case s.Srv.Broken() != nil:
		// Every connection through it failed from then on: no verdict.
		res.Result, res.Error = Error, s.Srv.Broken().Error()
	case !c.Caught:
		res.Result = Pass
		if res.Uncovered = s.Coverage.Missing(required); len(res.Uncovered) > 0 {
			res.Result = Inconclusive
		}
	case v != nil:
		res.Result = Fail
		res.Violation = v.Rule
		res.Counterexample = c.Program
		res.CounterexampleSteps = c.Steps()
		res.Checks = c.Checks
		res.Reproduce = Reproduce(s.Inst.Proto, s.FailingSeed(c, r.Seed), r.Steps, r.Cfg, s.Srv.Topology)
		replayable(&res, s, r, programOf(c), 0)
		if r.OnFailure != nil {
			r.OnFailure(s.Harness, c, res)
		}
	default:
		res.Result = Error
		res.Error = firstLine(c.Report)
	}
	return res
}

// seeds are the shard's seeds, nil for the whole budget.
func (r Run) seeds() ([]uint64, error) {
	if r.Seed == 0 {
		return nil, fmt.Errorf("a run needs a seed other than 0")
	}
	if r.Shard.Whole() {
		return nil, nil
	}
	return r.Shard.Seeds(r.Seed, r.Checks)
}

func (r Run) shardChecks() int {
	lo, hi := r.Shard.Range(r.Checks)
	return hi - lo
}

// flags are the budget as rapid's flags, which the search holds while its
// checks run (search.WithRapidFlags), so that two verdicts at once (a
// user's parallel tests) each run their own. Fail files are off: a
// failure is kept as its program, and a fail file's replay would end
// every later run at its first check.
func (r Run) flags() map[string]string {
	checks := r.Checks
	if testing.Short() {
		checks *= 5 // rapid divides by 5 under -short
	}
	set := map[string]string{
		"rapid.seed":       strconv.FormatUint(r.Seed, 10),
		"rapid.checks":     strconv.Itoa(checks),
		"rapid.nofailfile": "true",
	}
	if r.Steps > 0 {
		set["rapid.steps"] = strconv.Itoa(r.Steps)
	}
	return set
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

// TopologyOf names the server's topology as a Result does: single for a
// server Start gave.
func TopologyOf(srv *pgserver.Server) string {
	if srv.Topology == "" {
		return string(pgserver.Single)
	}
	return string(srv.Topology)
}

// Reproduce is the command that runs the failing check alone: its seed, a
// budget of one check, and whatever else changes the program drawn (the
// steps, the workers, the faults, the topology). steps is the run's
// rapid.steps (0: the flag's, as the command line or the test left it).
// Under -short rapid halves the steps, so the command asks for that many.
func Reproduce(p *sut.Protocol, seed uint64, steps int, cfg machine.Config, topo pgserver.Topology) string {
	cmd := fmt.Sprintf("outboxlab check --checks 1 --seed %d", seed)
	if steps := effectiveSteps(steps); steps != 30 {
		cmd += fmt.Sprintf(" --steps %d", steps)
	}
	return cmd + settingFlags(p, cfg, topo) + " " + protocolArg(p)
}

// protocolArg is p as the command line names it: a built-in's name, or
// its file.
func protocolArg(p *sut.Protocol) string {
	if strings.HasPrefix(p.File, "builtin/") {
		return p.Name
	}
	return p.File
}

// settingFlags are the flags of check (and replay) that change what a
// program does: the workers, the faults, the waiting and split steps,
// the topology and the worker executable, each when not the default.
func settingFlags(p *sut.Protocol, cfg machine.Config, topo pgserver.Topology) string {
	cmd := ""
	if def := machine.Default(); cfg.MaxWorkers != def.MaxWorkers {
		cmd += fmt.Sprintf(" --workers %d", cfg.MaxWorkers)
	}
	if !cfg.Faults {
		cmd += " --faults=false"
	}
	if cfg.NoWaitingSteps {
		cmd += " --waiting=false"
	}
	if cfg.NoSplitSteps {
		cmd += " --split=false"
	}
	if topo != "" && topo != pgserver.Single {
		cmd += " --topology " + string(topo)
	}
	if p.Worker != "" {
		cmd += " --worker " + shellQuote(p.Worker)
	}
	return cmd
}

// effectiveSteps is the average steps per check a run draws: its own
// (steps), else rapid's flag, halved under -short as rapid's Repeat does.
func effectiveSteps(steps int) int {
	if steps == 0 {
		steps, _ = strconv.Atoi(flag.CommandLine.Lookup("rapid.steps").Value.String())
	}
	if testing.Short() {
		steps /= 2
	}
	return steps
}

// shellQuote is s as one shell word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// programOf is a search's counterexample as a value; nil for a failure
// before the setup, which has no program.
func programOf(c search.Catch) *Program {
	if c.Recorded.Workers == nil {
		return nil
	}
	return ProgramOf(c.Recorded)
}

// replayable gives res the program a replay runs, with the settings
// (relaxed: what the search that found it relaxed) and the command it
// runs with; nothing when p is nil.
func replayable(res *Result, s search.Searcher, r Run, p *Program, relaxed model.Property) {
	if p == nil {
		return
	}
	res.Program = p
	res.Settings = SettingsOf(s.Inst.Proto, r.Cfg)
	if relaxed != 0 {
		res.Settings.Relaxed = relaxed.String()
	}
	res.Replay = ReplayCommand(s.Inst.Proto, r.Cfg, s.Srv.Topology)
}
