package relay

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/broker"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
)

func TestMain(m *testing.M) {
	worker.MainIfWorker()
	os.Exit(func() int {
		defer pgserver.CloseShared()
		return m.Run()
	}())
}

// harness installs protocol on the shared server and starts a broker of
// its own; both end with the test.
func harness(t *testing.T, protocol string, opts Options) *Harness {
	t.Helper()
	srv, err := pgserver.Shared()
	if err != nil {
		t.Fatal(err)
	}
	p, err := sut.Resolve(protocol)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inst, err := sut.Install(ctx, srv.ConnString(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inst.Close)
	b, err := broker.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	h, err := New(ctx, inst, b, DefaultConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func runProgram(t *testing.T, h *Harness, p Program) Outcome {
	t.Helper()
	out, err := h.Run(p)
	if err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(out.Lines, "\n"))
	}
	return out
}

func TestArticleScenario(t *testing.T) {
	h := harness(t, "leased", Options{})
	out := runProgram(t, h, ArticleProgram())
	t.Log("\n" + strings.Join(out.Lines, "\n"))
	for _, v := range out.Violations {
		t.Errorf("violation: %s: %s", v.Rule, v.Detail)
	}
	t.Logf("coverage %v", out.Coverage)
	for _, r := range out.History.Log {
		t.Log(r)
	}
}

func TestDebugAckLost(t *testing.T) {
	h := harness(t, "leased", Options{})
	p := Program{Workers: []string{"w1", "w2"}, Events: []string{"e1", "e2"}, Steps: steps(
		next("w1"), next("w1"), next("w1"), next("w1"), Step{Kind: NextAckLost, Worker: "w1"}, Step{Kind: BrokerRestart}, next("w2"), next("w2"),
	)}
	out := runProgram(t, h, p)
	t.Log("\n" + strings.Join(out.Lines, "\n"))
	t.Logf("coverage %v", out.Coverage)
	for _, r := range out.History.Log {
		t.Log(r)
	}
}

func TestDebugGenerated(t *testing.T) {
	h := harness(t, "leased", Options{})
	for i := range 30 {
		out := runProgram(t, h, Generate(uint64(i)<<32+1, 4, 3, 8, true))
		for _, l := range out.Lines {
			if strings.Contains(l, "ack_lost") {
				t.Log(l)
			}
		}
		t.Log(out.Coverage)
	}
}
