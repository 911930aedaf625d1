package report_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/report"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
)

// TestMain lets this test binary double as a worker process, and stops its
// PostgreSQL server when the tests end.
func TestMain(m *testing.M) {
	worker.MainIfWorker()
	os.Exit(func() int {
		defer pgserver.CloseShared()
		return m.Run()
	}())
}

// staleComplete is a fixed program the baseline fails at step 8 (its
// complete has no fencing: an expired owner's late complete applies),
// with both workers busy, a pause and a kill on the way, so that the page
// shows every kind of lane and mark but a waiting step.
var staleComplete = program("setup: 2 workers (w1 w2), events e1 e2",
	"w1.Claim() -> claimed e1 gen=1",
	"w2.Claim() -> claimed e2 gen=1",
	"w2.Complete(e2, gen=1) -> applied",
	"w1.Pause() -> ok",
	"Expire(e1) -> ok",
	"w1.Resume() -> ok",
	"w2.Kill() -> ok",
	"w1.Complete(e1, gen=1) -> applied",
)

// stranded is the baseline's stranded row: its violation is a step of
// the drain.
var stranded = program("setup: 2 workers (w1 w2), events e1", "w1.Claim() -> claimed e1 gen=1")

const staleRule = "stale owner's complete applied"

// program is a printed program: the setup line and numbered steps.
func program(setup string, steps ...string) []string {
	out := []string{setup}
	for i, s := range steps {
		out = append(out, fmt.Sprintf("%3d. %s", i+1, s))
	}
	return out
}

// traceOf replays lines against a fresh install of protocol and returns
// the recorded trace.
func traceOf(t *testing.T, protocol string, lines []string) *machine.Trace {
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
	h := machine.New(srv, inst, machine.Default())
	t.Cleanup(h.Close)
	tr, err := report.Capture(h, lines, "outboxlab check --checks 1 --seed 1 --faults=false "+protocol)
	if err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(lines, "\n"))
	}
	return tr
}
