package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/verdict"
)

// runReplay is `outboxlab replay [flags] FILE [PROTOCOL]`: each
// counterexample FILE holds runs once, no search, against its protocol,
// with the topology and settings of the check that found it (a --json
// object's), or those the flags give.
func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := machine.Default()
	var (
		asJSON bool
		topo   topologyFlag
		worker string
		s      = verdict.Settings{Faults: def.Faults, Workers: def.MaxWorkers, Waiting: true, Split: true}
	)
	fs.BoolVar(&asJSON, "json", false, "print one JSON object per program replayed (docs/json.md), itself a FILE replay reads")
	addTopologyFlag(fs, &topo)
	fs.BoolVar(&s.Faults, "faults", s.Faults, "attach the faults (a program's lost requests and replies need them)")
	fs.IntVar(&s.Workers, "workers", s.Workers, "at most this many worker processes, as the check ran with")
	fs.BoolVar(&s.Waiting, "waiting", true, "waiting steps, as the check ran with (docs/races.md)")
	fs.BoolVar(&s.Split, "split", true, "split steps, as the check ran with (docs/races.md)")
	fs.StringVar(&worker, "worker", "", "`'CMD ARGS'`: the worker executable the protocol FILE is for (docs/worker-protocol.md)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: outboxlab replay [flags] FILE [PROTOCOL]")
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), `
FILE is a check's --json output (every failing protocol's program is
replayed, with the topology and settings it was found with), or a program
as check prints it (PROTOCOL then names the protocol, unless a
"# protocol: NAME" line does). PROTOCOL, given, replaces the protocol a
--json object names: the same program against a fixed protocol. A flag
given replaces the --json object's setting. Exit status: 0 the program
passed, 1 it broke a rule, 2 bad input (FILE:LINE) or no database
(docs/verdicts.md).
`)
	}
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fmt.Fprintln(stderr, "outboxlab replay: want FILE [PROTOCOL]")
		return exitBad
	}
	path := fs.Arg(0)
	cxs, err := verdict.ReadCounterexamples(path)
	if err != nil {
		fmt.Fprintln(stderr, "outboxlab replay:", err)
		return exitBad
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := setRapidFlags(&checkFlags{seed: 1}); err != nil {
		fmt.Fprintln(stderr, "outboxlab replay:", err)
		return exitBad
	}
	code := exitPass
	for _, cx := range cxs {
		run := s
		if cx.Settings != nil {
			// The check's settings, each flag given over its own.
			run = *cx.Settings
			if set["faults"] {
				run.Faults = s.Faults
			}
			if set["workers"] {
				run.Workers = s.Workers
			}
			if set["waiting"] {
				run.Waiting = s.Waiting
			}
			if set["split"] {
				run.Split = s.Split
			}
		}
		if set["worker"] || cx.Settings == nil {
			run.Worker = worker
		}
		switch {
		case fs.NArg() == 2:
			run.Protocol = fs.Arg(1)
		case cx.Settings == nil:
			run.Protocol = cx.Protocol
		}
		if run.Protocol == "" {
			fmt.Fprintf(stderr, "outboxlab replay: %s:%d: a printed program needs its protocol: outboxlab replay %s PROTOCOL\n", path, cx.Line, path)
			return exitBad
		}
		t := topo.Topology
		if cx.Topology != "" && !set["topology"] {
			if t, err = pgserver.ParseTopology(cx.Topology); err != nil {
				fmt.Fprintf(stderr, "outboxlab replay: %s:%d: %v\n", path, cx.Line, err)
				return exitBad
			}
		}
		res, bad := replayOne(path, cx, run, t)
		if bad != nil {
			fmt.Fprintln(stderr, "outboxlab replay:", bad)
			return exitBad
		}
		code = worseExit(code, res.Result)
		if asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetEscapeHTML(false)
			enc.Encode(res)
			continue
		}
		verdict.PrintReplay(stdout, res)
		if cx.Violation != "" && res.Violation != cx.Violation {
			fmt.Fprintf(stdout, "  (the check that found this program broke: %s)\n", cx.Violation)
		}
	}
	return code
}

// replayOne installs the protocol and replays one counterexample; the
// error is bad input: the protocol's FILE:LINE, or the program's step
// that cannot run.
func replayOne(path string, cx verdict.Counterexample, s verdict.Settings, topo pgserver.Topology) (verdict.Result, error) {
	protocols, err := loadAllWorker([]string{s.Protocol}, s.Worker)
	if err != nil {
		return verdict.Result{}, err
	}
	srv, insts, err := installAll(topo, protocols)
	if err != nil {
		return verdict.Result{}, err
	}
	defer closeAll(insts)
	res, err := verdict.Replay(srv, insts[0], s.Config(), cx.Program)
	var refused *machine.ReplayError
	if errors.As(err, &refused) {
		return res, fmt.Errorf("%s:%d: step %d, %v, cannot run on %s: %v", path, cx.StepLine(refused.Step), refused.Step, refused.Op, s.Protocol, refused.Err)
	}
	return res, err
}
