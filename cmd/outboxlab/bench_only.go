package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/outboxlab/outboxlab/bench"
)

// wantsOnly reports whether bench's arguments ask for one part of the
// bench alone (--only concurrent), which has flags of its own.
func wantsOnly(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); strings.HasPrefix(a, "-") && name == "only" {
			return true
		}
	}
	return false
}

// runBenchOnly is `outboxlab bench --only concurrent`: the concurrent
// mode's three figures without the rest of the bench, to iterate on the
// driver (about a minute at the default 30 histories).
func runBenchOnly(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench --only", flag.ContinueOnError)
	fs.SetOutput(stderr)
	only := fs.String("only", "", "the part of the bench to run: concurrent")
	asJSON := fs.Bool("json", false, "print the figures as one JSON object")
	histories := fs.Int("histories", bench.Full().ConcurrentHistories, "histories of each concurrent figure (1 to 1000)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: outboxlab bench --only concurrent [--json] [--histories N] [--cpuprofile FILE]")
		fmt.Fprintln(fs.Output(), "The three figures and their target: docs/performance.md.")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	switch {
	case *only != "concurrent":
		fmt.Fprintf(stderr, "outboxlab bench: --only %q: the only part that runs alone is concurrent\n", *only)
		return exitBad
	case *histories < 1 || *histories > 1000:
		fmt.Fprintf(stderr, "outboxlab bench: --histories %d: want 1 to 1000\n", *histories)
		return exitBad
	case fs.NArg() > 0:
		fmt.Fprintln(stderr, "outboxlab bench: takes no protocol: it measures the built-in leased")
		return exitBad
	}
	srv, stop, ok := benchServer(*cpuProfile, stderr)
	if !ok {
		return exitBad
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	f, m, err := bench.ConcurrentOnly(ctx, srv, *histories, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "outboxlab bench:", err)
		return exitBad
	}
	ratio := f.OpsPerS / f.RawOpsPerS
	if *asJSON {
		// A rate over nothing is not a number, and does not encode.
		return printFiguresJSON(stdout, stderr, map[string]any{"concurrent_ops_per_s": f.OpsPerS, "raw_ops_per_s": f.RawOpsPerS,
			"linearize_ms_per_1k_ops": f.LinearizeMS, "ratio": round3(ratio), "machine": m,
			"mix": f.Mix, "raw_mix": f.RawMix, "cpu_us_per_op": f.CPUPerOpUS, "raw_cpu_us_per_op": f.RawCPUPerOpUS, "worker_cpu_us_per_op": f.WorkerCPUPerOpUS,
			"server_cpu_us_per_op": f.ServerCPUPerOpUS, "raw_server_cpu_us_per_op": f.RawServerCPUPerOpUS})
	}
	fmt.Fprintf(stdout, "machine: %d CPUs, PostgreSQL %s, load %s\n", m.CPUs, m.Postgres, m.Load)
	fmt.Fprintf(stdout, "concurrent_ops_per_s     %.0f\nraw_ops_per_s            %.0f\nlinearize_ms_per_1k_ops  %.3f ms\n", f.OpsPerS, f.RawOpsPerS, f.LinearizeMS)
	fmt.Fprintf(stdout, "cpu_us_per_op            %.1f us driver (%.1f of it in its workers), %.1f us raw (PostgreSQL's left out)\n", f.CPUPerOpUS, f.WorkerCPUPerOpUS, f.RawCPUPerOpUS)
	fmt.Fprintf(stdout, "server_cpu_us_per_op     %.1f us driver, %.1f us raw (PostgreSQL's processes)\n", f.ServerCPUPerOpUS, f.RawServerCPUPerOpUS)
	printMix(stdout, f)
	verdict := "met"
	if ratio < 0.5 {
		verdict = "MISSED"
	}
	fmt.Fprintf(stdout, "target concurrent_ops_per_s / raw_ops_per_s >= 0.5: %.2f, %s\n", ratio, verdict)
	return exitPass
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// printMix shows the statements each rate ran, by kind and outcome, per
// 1000 of that side's operations: the two sides must run the same mix.
func printMix(w io.Writer, f bench.ConcurrentFigures) {
	keys := map[string]bool{}
	total := func(m map[string]int) (n int) {
		for k, v := range m {
			keys[k] = true
			n += v
		}
		return n
	}
	dn, rn := total(f.Mix), total(f.RawMix)
	fmt.Fprintf(w, "statements per 1000       driver      raw   (of %d and %d)\n", dn, rn)
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		fmt.Fprintf(w, "  %-22s %8.1f %8.1f\n", k, per1000(f.Mix[k], dn), per1000(f.RawMix[k], rn))
	}
}

func per1000(n, total int) float64 {
	if total == 0 {
		return 0
	}
	return 1000 * float64(n) / float64(total)
}
