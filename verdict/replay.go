package verdict

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
)

// Replay runs p once on an installed protocol: no search and no
// shrinking, each step checked against the model and the rows as in a
// check, each fault injected again at its step, then the drain (what
// `outboxlab replay` and outboxlabtest.Replay run). The result is a pass
// or a fail with the replayed program; err is a program the protocol's
// harness cannot run at all (a *machine.ReplayError names the step).
func Replay(srv *pgserver.Server, inst *sut.Instance, cfg machine.Config, p machine.Program) (Result, error) {
	res := Result{Protocol: inst.Proto.Name, Topology: TopologyOf(srv), Counterexample: []string{}, Coverage: map[string]int{}}
	h, done, err := startHarness(srv, inst, cfg)
	if err != nil {
		res.Result, res.Error = Error, err.Error()
		return res, nil
	}
	defer done()
	start := time.Now()
	v, err := h.Replay(p)
	res.Seconds = time.Since(start).Seconds()
	res.Checks, res.Steps, _ = h.Stats()
	res.Coverage = h.Coverage.Counts()
	var refused *machine.ReplayError
	switch {
	case srv.Broken() != nil:
		res.Result, res.Error = Error, srv.Broken().Error()
	case errors.As(err, &refused):
		return res, err
	case err != nil:
		res.Result, res.Error = Error, err.Error()
	case v == nil:
		res.Result = Pass
	default:
		res.Result, res.Violation = Fail, v.Rule
		res.Counterexample = h.Program()
		res.CounterexampleSteps = machine.CountSteps(res.Counterexample)
		res.Program = ProgramOf(h.Recorded())
		res.Settings = SettingsOf(inst.Proto, cfg)
		res.Replay = ReplayCommand(inst.Proto, cfg, srv.Topology)
	}
	return res, nil
}

// PrintReplay writes a replay's result as `outboxlab replay` prints it:
// the verdict, and for a fail the replayed program and its broken rule.
func PrintReplay(w io.Writer, r Result) {
	name := Label(r.Protocol, r.Topology)
	switch r.Result {
	case Pass:
		fmt.Fprintf(w, "%s: pass (replayed, %d steps, %.1fs)\n", name, r.Steps, r.Seconds)
	case Fail:
		fmt.Fprintf(w, "%s: FAIL: %s (replayed, %.1fs)\n", name, r.Violation, r.Seconds)
		fmt.Fprintln(w, "  program (replayed):")
		for _, line := range r.Counterexample {
			fmt.Fprintln(w, "    "+line)
		}
		fmt.Fprintf(w, "  broken invariant: %s\n", r.Violation)
	default:
		fmt.Fprintf(w, "%s: ERROR: %s\n", name, r.Error)
	}
}

// SettingsOf is a check's settings as a replay needs them.
func SettingsOf(p *sut.Protocol, cfg machine.Config) *Settings {
	return &Settings{Protocol: protocolArg(p), Worker: p.Worker, Faults: cfg.Faults, Workers: cfg.MaxWorkers,
		Waiting: !cfg.NoWaitingSteps, Split: !cfg.NoSplitSteps}
}

// Config is the machine's configuration for these settings.
func (s Settings) Config() machine.Config {
	cfg := machine.Default()
	cfg.Faults = s.Faults
	if s.Workers > 0 {
		cfg.MaxWorkers = s.Workers
		cfg.MinWorkers = min(cfg.MinWorkers, s.Workers)
	}
	cfg.NoWaitingSteps, cfg.NoSplitSteps = !s.Waiting, !s.Split
	cfg.Relax, _ = s.Relax() // ReadCounterexamples refuses a name it does not know
	return cfg
}

// ReplayCommand is the command that replays a counterexample of p:
// FILE holds the printed program, or the check's --json.
func ReplayCommand(p *sut.Protocol, cfg machine.Config, topo pgserver.Topology) string {
	return "outboxlab replay" + settingFlags(p, cfg, topo) + " FILE " + protocolArg(p)
}
