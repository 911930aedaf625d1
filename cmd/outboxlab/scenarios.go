package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/outboxlab/outboxlab/scenarios"
)

func runScenarios(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scenarios", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print one JSON object per scenario")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: outboxlab scenarios [--json] [PROTOCOL ...]")
		fmt.Fprintln(fs.Output(), "The article's six tests, and what they miss that check finds: docs/evidence.md.")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	protocols, err := loadAll(fs.Args())
	if err != nil {
		fmt.Fprintln(stderr, "outboxlab:", err)
		return exitBad
	}
	_, insts, err := installAll(protocols)
	if err != nil {
		fmt.Fprintln(stderr, "outboxlab:", err)
		return exitBad
	}
	defer closeAll(insts)
	code := exitPass
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if !*asJSON {
		fmt.Fprintln(tw, "PROTOCOL\tSCENARIO\tRESULT\tDETAIL")
	}
	enc := json.NewEncoder(stdout)
	for _, inst := range insts {
		passed := 0
		for _, r := range scenarios.Run(context.Background(), inst) {
			if r.Result == "pass" {
				passed++
			} else {
				code = exitFail
			}
			if *asJSON {
				enc.Encode(r)
			} else {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Protocol, r.Scenario, r.Result, r.Detail)
			}
		}
		if !*asJSON {
			fmt.Fprintf(tw, "%s\t%d/%d passed\t\t\n", inst.Proto.Name, passed, len(scenarios.All))
		}
	}
	tw.Flush()
	return code
}
