package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/outboxlab/outboxlab/bench"
)

// wantsBacklog reports whether bench's arguments ask for the backlog mode,
// which takes protocols and flags of its own.
func wantsBacklog(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--backlog", "-backlog", "--backlog=true", "-backlog=true":
			return true
		}
	}
	return false
}

func runBacklog(args []string, stdout, stderr io.Writer) int {
	opt := bench.DefaultBacklog()
	fs := flag.NewFlagSet("bench --backlog", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Bool("backlog", true, "measure each protocol's claim under a growing backlog (this mode)")
	asJSON := fs.Bool("json", false, "print the figures as one JSON object")
	sizes := fs.String("sizes", "1e3,1e4,1e5,1e6", "backlog sizes in events, ascending, from 200 to 1e7 (1000 or 1e3)")
	fs.DurationVar(&opt.For, "for", opt.For, "each latency measurement, and pgbench's run (at least 1s for pgbench)")
	fs.DurationVar(&opt.ChurnFor, "churn", opt.ChurnFor, "the churn run on the largest backlog (0: none)")
	fs.BoolVar(&opt.Pgbench, "pgbench", opt.Pgbench, "run the same claim with pgbench at every size")
	svg := fs.String("svg", "", "also write the one-connection claim p50 and p99 against the size as an SVG plot to `FILE`")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: outboxlab bench --backlog [--json] [--svg FILE] [--sizes LIST] [--for D] [--churn D] [--pgbench=false] [PROTOCOL ...]")
		fmt.Fprintln(fs.Output(), "PROTOCOL is a protocol file or a built-in name (default: leased). The figures: docs/backlog.md.")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	var err error
	if opt.Sizes, err = parseSizes(*sizes); err != nil {
		fmt.Fprintln(stderr, "outboxlab bench: --sizes:", err)
		return exitBad
	}
	if opt.For <= 0 || opt.ChurnFor < 0 {
		fmt.Fprintln(stderr, "outboxlab bench: --for must be positive and --churn not negative")
		return exitBad
	}
	if *svg != "" {
		// Said now, not after an hour of measuring.
		if fi, err := os.Stat(filepath.Dir(*svg)); err != nil || !fi.IsDir() {
			fmt.Fprintf(stderr, "outboxlab bench: --svg %s: no directory %s to write it in\n", *svg, filepath.Dir(*svg))
			return exitBad
		}
	}
	names := fs.Args()
	if len(names) == 0 {
		names = []string{"leased"}
	}
	protocols, err := loadAll(names)
	if err != nil {
		fmt.Fprintln(stderr, "outboxlab:", err)
		return exitBad
	}
	srv, stopProfile, ok := benchServer("", stderr)
	if !ok {
		return exitBad
	}
	defer stopProfile()
	// An interrupt cancels the run, and its deferred cleanup drops the
	// schema it was measuring in (a SIGKILL leaves that to the next run).
	interrupted, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(interrupted, time.Hour)
	defer cancel()
	result, err := bench.RunBacklog(ctx, srv, protocols, opt, stderr)
	if interrupted.Err() != nil {
		fmt.Fprintln(stderr, "outboxlab bench: interrupted; the schema it was measuring in is dropped")
		return exitBad
	}
	if err != nil {
		fmt.Fprintln(stderr, "outboxlab bench:", err)
		return exitBad
	}
	if *svg != "" {
		if err := writeBacklogPlot(*svg, result); err != nil {
			fmt.Fprintln(stderr, "outboxlab bench: --svg:", err)
			return exitBad
		}
	}
	if *asJSON {
		// A figure that is not a number (a ratio over nothing) does not
		// encode: said, rather than exit 0 with nothing printed.
		return printFiguresJSON(stdout, stderr, result)
	}
	printBacklog(stdout, result)
	return exitPass
}

// writeBacklogPlot writes the run's plot to path, through a temporary
// file beside it, so that a run that fails to write leaves the old plot.
func writeBacklogPlot(path string, b bench.Backlog) error {
	svg, err := bench.BacklogPlot(b)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, svg, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// parseSizes reads "1e3,1e4,100000": whole numbers of events, ascending.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v != float64(int(v)) {
			return nil, fmt.Errorf("%q is not a whole number of events (write 1000 or 1e3)", f)
		}
		n := int(v)
		switch {
		case n < 200 || n > 10_000_000:
			return nil, fmt.Errorf("%s events: a backlog has from 200 events (so that every kind of row is in it) to 1e7", f)
		case len(out) > 0 && n <= out[len(out)-1]:
			return nil, fmt.Errorf("%s after %d: sizes go in ascending order", f, out[len(out)-1])
		}
		out = append(out, n)
	}
	return out, nil
}

func printBacklog(w io.Writer, b bench.Backlog) {
	m := b.Machine
	fmt.Fprintf(w, "machine: %d CPUs (%s), %s, PostgreSQL %s (%s), load %s\n", m.CPUs, m.CPU, m.OS, m.Postgres, m.Server, m.Load)
	for _, p := range b.Protocols {
		fmt.Fprintf(w, "\n%s (%.0fs)\n", p.Protocol, p.Seconds)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "EVENTS\tNOT SENT\tP50\tP99\tCLAIMS/S\tP50 x4\tCLAIMS/S x4\tPGBENCH P50\tRATIO\tROWS REMOVED")
		for _, s := range p.Sizes {
			one, four := latencyOf(s, 1), latencyOf(s, 4)
			pb, ratio := "-", "-"
			if s.Pgbench != nil {
				pb, ratio = fmt.Sprintf("%.0f us", s.Pgbench.P50US), fmt.Sprintf("%.2f", s.Pgbench.P50Ratio)
			}
			fmt.Fprintf(tw, "%d\t%d\t%.0f us\t%.0f us\t%.0f\t%.0f us\t%.0f\t%s\t%s\t%d\n", s.Events, s.Mix.NotSent(),
				one.P50US, one.P99US, one.ClaimsPerS, four.P50US, four.ClaimsPerS, pb, ratio, s.Plan.Removed)
		}
		tw.Flush()
		last := p.Sizes[len(p.Sizes)-1]
		fmt.Fprintf(w, "growth (p50 at %d / p50 at %d): %.2f\n", last.Events, p.Sizes[0].Events, p.Growth)
		fmt.Fprintf(w, "plan: %s\n", last.Plan.KeyLine)
		fmt.Fprintf(w, "verdict: %s\n", p.Verdict)
		if c := p.Churn; c != nil {
			fmt.Fprintf(w, "churn: %d cycles in %.1fs from %d connections (%.0f/s), autovacuum %s\n", c.Cycles, c.Seconds, c.Connections, c.CyclesPerS, c.Autovacuum)
			fmt.Fprintf(w, "  before: n_dead_tup %d, %d bytes, claim p50 %.0f us\n", c.Before.DeadTuples, c.Before.Bytes, c.Before.ClaimP50US)
			fmt.Fprintf(w, "  after:  n_dead_tup %d, %d bytes, claim p50 %.0f us, %d autovacuum run(s)\n", c.After.DeadTuples, c.After.Bytes, c.After.ClaimP50US, c.After.AutovacuumRuns-c.Before.AutovacuumRuns)
			fmt.Fprintf(w, "  after a VACUUM: n_dead_tup %d, %d bytes, claim p50 %.0f us\n", c.AfterVacuum.DeadTuples, c.AfterVacuum.Bytes, c.AfterVacuum.ClaimP50US)
			fmt.Fprintf(w, "  plan then: %s\n", c.AfterKeyLine)
		}
	}
}

func latencyOf(s bench.SizeResult, conns int) bench.Latency {
	i := slices.IndexFunc(s.Latency, func(l bench.Latency) bool { return l.Connections == conns })
	if i < 0 {
		return bench.Latency{}
	}
	return s.Latency[i]
}
