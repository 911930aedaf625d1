package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime/pprof"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/outboxlab/outboxlab/bench"
	"github.com/outboxlab/outboxlab/pgserver"
)

// nightlyChecks is the nightly run the figures are priced against.
const nightlyChecks = 100_000

func runBench(args []string, stdout, stderr io.Writer) int {
	if wantsBacklog(args) {
		return runBacklog(args, stdout, stderr) // backlog.go
	}
	if wantsOnly(args) {
		return runBenchOnly(args, stdout, stderr) // bench_only.go
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the figures as one JSON object")
	quick := fs.Bool("quick", false, "run every measurement a few times only (a smoke test, not figures)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: outboxlab bench [--json] [--quick] [--cpuprofile FILE]")
		fmt.Fprintln(fs.Output(), "       outboxlab bench --backlog [flags] [PROTOCOL ...]   (the claim under a backlog: bench --backlog -h)")
		fmt.Fprintln(fs.Output(), "       outboxlab bench --only concurrent [--json] [--histories N]   (the concurrent mode's figures alone: bench --only concurrent -h)")
		fmt.Fprintln(fs.Output(), "The figures and the targets they are held to: docs/performance.md; the backlog: docs/backlog.md.")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "outboxlab bench: takes no protocol: it measures the built-in leased and baseline")
		return exitBad
	}
	srv, stop, ok := benchServer(*cpuProfile, stderr)
	if !ok {
		return exitBad
	}
	defer stop()
	opt := bench.Full()
	if *quick {
		opt = bench.Quick()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	figures, err := bench.Run(ctx, srv, opt, stderr)
	if err == nil {
		err = figures.Finite()
	}
	if err != nil {
		fmt.Fprintln(stderr, "outboxlab bench:", err)
		return exitBad
	}
	if *asJSON {
		// A figure that is not a number (a ratio over nothing) does not
		// encode: said, rather than exit 0 with nothing printed.
		return printFiguresJSON(stdout, stderr, figures)
	}
	printFigures(stdout, figures)
	return exitPass
}

func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func printFigures(w io.Writer, f bench.Figures) {
	m := f.Machine
	fmt.Fprintf(w, "machine: %d CPUs (%s), %s, %s, PostgreSQL %s (%s), load %s\n\n", m.CPUs, m.CPU, m.OS, m.Go, m.Postgres, m.Server, m.Load)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FIGURE\tVALUE\tWHAT")
	type row struct {
		name  string
		value float64
		unit  string
		what  string
	}
	rows := []row{
		{"sql_floor_us", f.SQLFloorUS, "us", "median SELECT 1 round trip (pgx statement cache)"},
		{"step_us", f.StepUS, "us", "median over checks of check time / steps, checks included"},
		{"external_step_us", f.ExternalStepUS, "us", "the same through a worker executable (examples/python/leased.py)"},
		{"sql_share", f.SQLShare, "", "state machine time spent waiting on PostgreSQL"},
		{"reset_us", f.ResetUS, "us", "median per-check reset (4 events)"},
		{"schema_reset_us", f.SchemaResetUS, "us", "median create schema + table, drop schema"},
		{"baseline_find_ms", f.BaselineFindMS, "ms", "median time to baseline's first counterexample"},
		{"baseline_shrink_ms", f.BaselineShrinkMS, "ms", "median time from there to its minimal form"},
		{"kill_cycle_ms", f.KillCycleMS, "ms", "median spawn, connect, claim, SIGKILL, backend gone"},
		{"worker_start_cpu_ms", f.WorkerStartCPUMS, "ms", "median CPU of one worker process (" + m.Worker + ") from exec to its answer to init"},
		{"concurrent_ops_per_s", f.ConcurrentOpsPerS, "", "check --concurrent's driver on leased, unchecked: operations recorded per second"},
		{"raw_ops_per_s", f.RawOpsPerS, "", "the same statements from as many plain pgx connections"},
		{"linearize_ms_per_1k_ops", f.LinearizeMSPer1kOps, "ms", "porcupine's check time per 1000 recorded operations"},
	}
	if f.MeasuresTopologies() {
		rows = append(rows,
			row{"failover_cycle_ms", f.FailoverCycleMS, "ms", "median async-standby MarkDurable, Stall, Failover (kill, promote, rebuild), reconnect"},
			row{"crash_cycle_ms", f.CrashCycleMS, "ms", "median async-commit MarkDurable, Crash (kill, crash recovery), reconnect"},
			row{"round_trips_per_step", f.RoundTripsPerStep, "", "statements the server executed per step (pg_stat_statements), an upper bound of round trips"},
			row{"state_read_share", f.StateReadShare, "", "the harness's state reads among them"})
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.3f %s\t%s\n", r.name, r.value, r.unit, r.what)
	}
	parallel := slices.Sorted(maps.Keys(f.ChecksPerS))
	for _, p := range parallel {
		fmt.Fprintf(tw, "checks_per_s[%s]\t%.0f\t%s parallel run(s), separate schemas\n", p, f.ChecksPerS[p], p)
	}
	tw.Flush()
	if !f.MeasuresTopologies() {
		fmt.Fprintf(w, "failover_cycle_ms, crash_cycle_ms, round_trips_per_step, state_read_share: not measured (they need a local cluster's binaries; the server is %s)\n", m.Server)
	}
	fmt.Fprintln(w)
	for _, t := range f.Targets() {
		verdict := "met"
		if !t.Met {
			verdict = "MISSED"
		}
		fmt.Fprintf(w, "target %s %s: %.2f, %s\n", t.Name, t.Want, t.Value, verdict)
	}
	for _, p := range parallel {
		if rate := f.ChecksPerS[p]; rate > 0 {
			d := time.Duration(float64(nightlyChecks) / rate * float64(time.Second))
			fmt.Fprintf(w, "nightly %d checks with %s parallel: %v\n", nightlyChecks, p, d.Round(time.Second))
		}
	}
}

// benchServer finds or starts the server, as check does, and starts the
// CPU profile a --cpuprofile asks for; stop ends it (a no-op without one).
// Its errors are printed; ok is false after one.
func benchServer(cpuProfile string, stderr io.Writer) (srv *pgserver.Server, stop func(), ok bool) {
	srv, err := pgserver.Shared()
	if err != nil {
		fmt.Fprintln(stderr, "outboxlab:", err)
		return nil, nil, false
	}
	stop = func() {}
	if cpuProfile != "" {
		if stop, err = startCPUProfile(cpuProfile); err != nil {
			fmt.Fprintln(stderr, "outboxlab bench:", err)
			return nil, nil, false
		}
	}
	return srv, stop, true
}

// printFiguresJSON prints a bench's figures as one indented JSON object.
// A figure that is not a number (a ratio over nothing) does not encode:
// that is an error, exit 2, not an exit 0 with nothing printed.
func printFiguresJSON(stdout, stderr io.Writer, v any) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintln(stderr, "outboxlab bench: the figures do not encode as JSON:", err)
		return exitBad
	}
	return exitPass
}
