package outboxlabtest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/verdict"
)

// running serializes runs: rapid's flags, which hold the budget, are
// global to the binary.
var running sync.Mutex

// Result is one protocol's verdict, as `outboxlab check --json` prints it
// (docs/json.md).
type Result = verdict.Result

// Check runs the search on the protocol file (or a built-in name, leased
// or baseline) and fails t unless it passes: with the broken rule, the
// shrunk counterexample and the commands that reproduce it, for a
// counterexample; with the coverage classes never reached, for an
// inconclusive run; with FILE:LINE, for a bad protocol file.
func Check(t testing.TB, protocolPath string, opts ...Option) {
	t.Helper()
	res, err := Run(protocolPath, opts...)
	if err != nil {
		t.Fatalf("outboxlabtest: %v", err)
		return // a testing.TB of a test's own may not stop the goroutine
	}
	text := describe(t, res)
	if res.Result == verdict.Pass {
		t.Log(text)
		return
	}
	if res.Result == verdict.Fail {
		if path, err := keepCounterexample(t.Name(), res); err != nil {
			text += fmt.Sprintf("  (could not keep the counterexample: %v)\n", err)
		} else if path != "" {
			text += "  counterexample kept in " + path + "\n"
		}
	}
	t.Error(text)
}

// Run is Check without the test: the verdict, for a test that asserts on
// it (a mutant of your protocol that must fail, say). The error is bad
// input (a protocol file's FILE:LINE, a bad option or budget) or no
// server; a search that ends in a harness error is a Result of "error".
func Run(protocolPath string, opts ...Option) (Result, error) {
	worker := newOptions(opts).worker
	return run(func() (installer, error) {
		resolve := sut.Resolve
		if worker != "" {
			resolve = func(path string) (*sut.Protocol, error) { return sut.ResolveWorker(path, worker) }
		}
		p, err := resolve(protocolPath)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, connString string) (*sut.Instance, error) {
			return sut.Install(ctx, connString, p)
		}, nil
	}, opts)
}

// installer installs the protocol of a run on the server at connString.
type installer func(ctx context.Context, connString string) (*sut.Instance, error)

// run is Run and RunDriver: the options checked, the protocol found
// (resolve: bad input before any server starts), the server up, the
// protocol installed, the search run.
func run(resolve func() (installer, error), opts []Option) (Result, error) {
	if !mainCalled.Load() {
		return Result{}, errors.New("the test binary must call outboxlabtest.Main from TestMain: it doubles as the worker processes")
	}
	o := newOptions(opts)
	if o.cfg.MaxWorkers < 2 {
		return Result{}, fmt.Errorf("outboxlabtest.Workers(%d): want at least 2", o.cfg.MaxWorkers)
	}
	running.Lock()
	defer running.Unlock()
	b, err := o.budget()
	if err != nil {
		return Result{}, err
	}
	if _, err := b.shard.Seeds(b.seed, b.checks); !b.shard.Whole() && err != nil {
		return Result{}, err
	}
	topo, err := pgserver.ParseTopology(string(o.topology))
	if err != nil {
		return Result{}, fmt.Errorf("outboxlabtest.Topology: %w", err)
	}
	install, err := resolve()
	if err != nil {
		return Result{}, err
	}
	srv, err := pgserver.SharedTopology(topo)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	inst, err := install(ctx, srv.ConnString())
	cancel()
	if err != nil {
		return Result{}, err
	}
	defer inst.Close()
	res := verdict.Check(srv, inst, verdict.Run{Cfg: o.cfg, Seed: b.seed, Checks: b.checks, Steps: b.steps,
		Shard: b.shard, Shrink: b.shrink, Profile: o.profile})
	return res, nil
}

// describe is the result as the command prints it, with the go test
// command that runs the failing check alone.
func describe(t testing.TB, res Result) string {
	var sb strings.Builder
	sb.WriteString("outboxlab: ")
	if res.Profile != nil {
		verdict.PrintProfile(&sb, res)
	} else {
		verdict.Print(&sb, res)
	}
	text := sb.String()
	if res.Reproduce != "" {
		// After the seed's line: the same check under go test.
		for _, label := range []string{"  reproduce from the seed: ", "  reproduce: "} {
			if line := label + res.Reproduce + "\n"; strings.Contains(text, line) {
				text = strings.Replace(text, line, line+"  reproduce with go test: "+goTestCommand(t.Name(), res)+"\n", 1)
				break
			}
		}
	}
	return text
}

// goTestCommand runs the failing check alone under go test: its seed, one
// check, the steps it ran with; outside the shard it was found in.
func goTestCommand(test string, res Result) string {
	var run []string
	for _, part := range strings.Split(test, "/") {
		run = append(run, "^"+regexp.QuoteMeta(part)+"$")
	}
	cmd := fmt.Sprintf("go test -run '%s' -rapid.checks=1 -rapid.seed=%s", strings.Join(run, "/"), flagOf(res.Reproduce, "seed", "0"))
	if test == "" { // RunDriver's: the caller's test is unknown
		cmd = "go test -rapid.checks=1 -rapid.seed=" + flagOf(res.Reproduce, "seed", "0")
	}
	// The steps the check ran with, as the command's line has them (rapid
	// halves -rapid.steps under -short).
	steps := flagOf(res.Reproduce, "steps", "30")
	switch {
	case testing.Short() && steps != "15":
		n, _ := strconv.Atoi(steps)
		cmd += fmt.Sprintf(" -short -rapid.steps=%d", 2*n)
	case testing.Short():
		cmd += " -short"
	case steps != "30":
		cmd += " -rapid.steps=" + steps
	}
	if res.Shard != "" {
		cmd = "OUTBOXLAB_SHARD=1/1 " + cmd
	}
	return cmd + " ."
}

// flagOf is a number flag's value in the command's reproduce line, or def.
func flagOf(reproduce, name, def string) string {
	if m := regexp.MustCompile(`--` + name + ` (\d+)`).FindStringSubmatch(reproduce); m != nil {
		return m[1]
	}
	return def
}
