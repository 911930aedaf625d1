package outboxlabtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/verdict"
)

// Replay runs each counterexample file holds once, no search (outboxlab
// replay): file is a `check --json` output, or a program as check prints
// it (a counterexample OUTBOXLAB_ARTIFACTS kept, say). It fails t unless
// every program passes, with the broken rule and the replayed program;
// with FILE:LINE for a file that holds no program or a step that cannot
// run. The protocol, topology and settings are the --json object's, or
// a printed program's "# protocol:" header with the defaults; options
// given (Protocol, Topology, Faults, Workers, Worker) replace them.
func Replay(t testing.TB, file string, opts ...Option) {
	t.Helper()
	results, err := RunReplay(file, opts...)
	if err != nil {
		t.Fatalf("outboxlabtest: %v", err)
		return
	}
	for _, res := range results {
		var sb strings.Builder
		verdict.PrintReplay(&sb, res)
		if res.Result == verdict.Pass {
			t.Log("outboxlab: " + sb.String())
			continue
		}
		t.Error("outboxlab: " + sb.String())
	}
}

// RunReplay is Replay without the test: a result per program replayed.
// The error is bad input (FILE:LINE, a protocol's own) or no server.
func RunReplay(file string, opts ...Option) ([]Result, error) {
	if !mainCalled.Load() {
		return nil, errors.New("the test binary must call outboxlabtest.Main from TestMain: it doubles as the worker processes")
	}
	cxs, err := verdict.ReadCounterexamples(file)
	if err != nil {
		return nil, err
	}
	running.Lock()
	defer running.Unlock()
	var out []Result
	for _, cx := range cxs {
		o := replayOptions(cx, opts)
		if o.protocol == "" {
			return out, fmt.Errorf("%s:%d: a printed program needs its protocol: a \"# protocol:\" line, or the option outboxlabtest.Protocol", file, cx.Line)
		}
		res, err := replayOne(file, cx, o)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// replayOptions are the file's settings for cx with opts over them.
func replayOptions(cx verdict.Counterexample, opts []Option) options {
	o := options{cfg: machine.Default(), topology: pgserver.Single, protocol: cx.Protocol}
	if s := cx.Settings; s != nil {
		o.cfg, o.worker, o.protocol = s.Config(), s.Worker, s.Protocol
	}
	if cx.Topology != "" {
		o.topology = pgserver.Topology(cx.Topology)
	}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// replayOne installs o's protocol on o's topology and replays cx.
func replayOne(file string, cx verdict.Counterexample, o options) (Result, error) {
	topo, err := pgserver.ParseTopology(string(o.topology))
	if err != nil {
		return Result{}, fmt.Errorf("%s:%d: %w", file, cx.Line, err)
	}
	p, err := sut.Resolve(o.protocol)
	if o.worker != "" {
		p, err = sut.ResolveWorker(o.protocol, o.worker)
	}
	if err != nil {
		return Result{}, err
	}
	srv, err := pgserver.SharedTopology(topo)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	inst, err := sut.Install(ctx, srv.ConnString(), p)
	cancel()
	if err != nil {
		return Result{}, err
	}
	defer inst.Close()
	res, err := verdict.Replay(srv, inst, o.cfg, cx.Program)
	var refused *machine.ReplayError
	if errors.As(err, &refused) {
		return res, fmt.Errorf("%s:%d: step %d, %v, cannot run on %s: %v", file, cx.StepLine(refused.Step), refused.Step, refused.Op, o.protocol, refused.Err)
	}
	return res, err
}
