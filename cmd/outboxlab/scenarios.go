package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/outboxlab/outboxlab/scenarios"
	"github.com/outboxlab/outboxlab/verdict"
)

// scenarioResult is one scenario's result, the JSON object `scenarios
// --json` prints: the scenario's, with the topology it ran on.
type scenarioResult struct {
	scenarios.Result
	Topology string `json:"topology"`
}

func runScenarios(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scenarios", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print one JSON object per scenario")
	var topo topologyFlag
	addTopologyFlag(fs, &topo)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: outboxlab scenarios [--json] [--topology NAME] [PROTOCOL ...]")
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
	for _, p := range protocols {
		if err := scenarios.Applies(p); err != nil {
			fmt.Fprintln(stderr, "outboxlab:", err)
			return exitBad
		}
	}
	if topo.Pooler() {
		// Their worker connects to the server directly: the result would
		// name a pooler it never went through.
		fmt.Fprintf(stderr, "outboxlab: the scenarios do not run through a connection pooler yet (--topology %s)\n", topo.Topology)
		return exitBad
	}
	srv, insts, err := installAll(topo.Topology, protocols)
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
	topology := verdict.TopologyOf(srv)
	for _, inst := range insts {
		passed := 0
		name := verdict.Label(inst.Proto.Name, topology)
		for _, r := range scenarios.Run(context.Background(), inst) {
			if r.Result == "pass" {
				passed++
			} else {
				code = exitFail
			}
			if *asJSON {
				enc.Encode(scenarioResult{r, topology})
			} else {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, r.Scenario, r.Result, r.Detail)
			}
		}
		if !*asJSON {
			fmt.Fprintf(tw, "%s\t%d/%d passed\t\t\n", name, passed, len(scenarios.All))
		}
	}
	tw.Flush()
	return code
}
