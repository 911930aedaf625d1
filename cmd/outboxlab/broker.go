package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/outboxlab/outboxlab/broker"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/relay"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/verdict"
)

// brokerFlags are check's relay-mode flags.
type brokerFlags struct {
	on      bool
	variant string
}

// relayChecks is relay mode's default budget: a check costs a topic, a
// consumer pass and process kills, about a tenth of a second or more.
const relayChecks = 40

func (b *brokerFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&b.on, "broker", false, "relay mode: workers publish each claimed event to a Kafka-protocol broker (embedded kfake, or "+
		broker.EnvBrokers+") before completing it, and a consumer applies the topic to PostgreSQL; the properties are the pipeline's "+
		fmt.Sprintf("(default budget %d checks; a pass needs the classes %s) (docs/relay.md)", relayChecks, strings.Join(relay.RequiredClasses(true, true), ", ")))
	names := make([]string, len(relay.Variants))
	for i, v := range relay.Variants {
		names[i] = v.Name
	}
	fs.StringVar(&b.variant, "relay-variant", "", "with --broker, run a broken relay or consumer (docs/relay.md): "+strings.Join(names, ", "))
}

// brokerResult is check's result with relay mode's own figures.
type brokerResult struct {
	checkResult
	Broker  string `json:"broker"`
	Variant string `json:"variant,omitempty"`
	// DuplicateRate is redelivered records per event delivered.
	DuplicateRate float64 `json:"duplicate_rate"`
}

// runBroker is `check --broker`: each protocol's search in relay mode.
func runBroker(protocols []*sut.Protocol, f checkFlags, stdout, stderr io.Writer) int {
	var opts relay.Options
	if f.broker.variant != "" {
		v, err := relay.VariantNamed(f.broker.variant)
		if err != nil {
			fmt.Fprintln(stderr, "outboxlab check: --relay-variant:", err)
			return exitBad
		}
		opts = v.Opts
	}
	if f.profile {
		fmt.Fprintln(stderr, "outboxlab check: --profile has no relay mode")
		return exitBad
	}
	if f.seed == 0 {
		f.seed = rand.Uint64N(1 << 53)
	}
	if f.checks == 0 {
		f.checks = relayChecks
	}
	if f.topo.Pooler() {
		// The relay's processes connect to the server directly.
		fmt.Fprintf(stderr, "outboxlab check: --broker does not run through a connection pooler yet (--topology %s)\n", f.topo.Topology)
		return exitBad
	}
	srv, insts, err := installAll(f.topo.Topology, protocols)
	if err != nil {
		fmt.Fprintln(stderr, "outboxlab:", err)
		return exitBad
	}
	defer closeAll(insts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	b, err := broker.Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(stderr, "outboxlab: broker:", err)
		return exitBad
	}
	defer b.Close()
	code := exitPass
	for _, inst := range insts {
		res := brokerOne(srv, inst, b, opts, f)
		code = worseExit(code, res.Result)
		if f.asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetEscapeHTML(false)
			enc.Encode(res)
			continue
		}
		verdict.Print(stdout, res.checkResult)
		if res.Result != "error" {
			fmt.Fprintf(stdout, "  broker: %s; duplicate rate %.3f (redelivered records per event delivered)\n", res.Broker, res.DuplicateRate)
		}
	}
	return code
}

func brokerOne(srv *pgserver.Server, inst *sut.Instance, b *broker.Broker, opts relay.Options, f checkFlags) brokerResult {
	res := brokerResult{checkResult: checkResult{Protocol: inst.Proto.Name, Topology: verdict.TopologyOf(srv), Seed: f.seed, Counterexample: []string{}},
		Broker: b.Describe(), Variant: f.broker.variant}
	cfg := relay.DefaultConfig()
	cfg.Faults = f.faults
	cfg.MaxWorkers = min(f.workers, cfg.MaxWorkers)
	if f.steps > 0 {
		cfg.Steps = f.steps
	}
	h, err := relay.New(context.Background(), inst, b, cfg, opts)
	if err != nil {
		res.Result, res.Error = "error", err.Error()
		return res
	}
	defer h.Close()
	shrink := f.shrink
	if shrink == 0 {
		shrink = 20 * time.Second
	}
	start := time.Now()
	found, err := h.Search(f.seed, f.checks, shrink)
	res.Seconds = time.Since(start).Seconds()
	res.Checks, res.Steps, res.Coverage = found.Checks, found.Steps, found.Coverage
	if delivered := found.Coverage[relay.ClassPublished] - found.Coverage[relay.ClassRedelivered]; delivered > 0 {
		res.DuplicateRate = float64(found.Coverage[relay.ClassRedelivered]) / float64(delivered)
	}
	switch {
	case err != nil:
		res.Result, res.Error = "error", err.Error()
	case found.Failure != nil:
		res.Result = "fail"
		res.Violation = found.Failure.Violations[0].Rule
		res.Counterexample = found.Failure.Lines
		for _, v := range found.Failure.Violations {
			res.Counterexample = append(res.Counterexample, "  ^ violation: "+v.Detail)
		}
		res.Reproduce = relayReproduce(inst.Proto, found.FailingSeed, f)
	default:
		res.Result = "pass"
		for _, class := range relay.RequiredClasses(cfg.Faults, h.CanRestart()) {
			if found.Coverage[class] == 0 {
				res.Uncovered = append(res.Uncovered, class)
			}
		}
		if len(res.Uncovered) > 0 {
			res.Result = "inconclusive"
		}
	}
	return res
}

func relayReproduce(p *sut.Protocol, seed uint64, f checkFlags) string {
	arg := p.Name
	if !strings.HasPrefix(p.File, "builtin/") {
		arg = p.File
	}
	cmd := fmt.Sprintf("outboxlab check --broker --checks 1 --seed %d", seed)
	if f.broker.variant != "" {
		cmd += " --relay-variant " + f.broker.variant
	}
	if !f.faults {
		cmd += " --faults=false"
	}
	return cmd + f.topo.rerun() + " " + arg
}
