package machine

import (
	"errors"
	"os"
	"testing"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
)

// processesAt is a processes a test sets by hand.
type processesAt struct{ paused, stale map[string]bool }

func (p processesAt) Paused(name string) bool { return p.paused[name] }
func (p processesAt) Stale(name string) bool  { return p.stale[name] }

// offlineRun is a run on protocol file with no server and no worker
// process: enough for the steps' preconditions, which read only the model
// and the processes' states. Each op in steps moves the model by its
// first transition.
func offlineRun(t *testing.T, file string, workers []string, steps ...model.Op) (*run, processesAt) {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	proto, err := sut.Parse("offline", file, string(src))
	if err != nil {
		t.Fatal(err)
	}
	procs := processesAt{paused: map[string]bool{}, stale: map[string]bool{}}
	h := &Harness{Cfg: Default(), Inst: &sut.Instance{Proto: proto}}
	r := &run{h: h, workers: workers, dead: map[string]bool{}, procs: procs,
		states: []model.State{model.NewWith(h.policy())}}
	for _, op := range steps {
		if op.Kind == model.Enqueue {
			r.nextEvent++
		}
		next := r.model().Step(op)
		if len(next) == 0 {
			t.Fatalf("the model does not take %v", op)
		}
		r.states = []model.State{next[0].Next}
	}
	return r, procs
}

// TestPreconditionsWithoutAServer holds each kind of step's precondition
// (steps.go, step_*.go), which the draw and the replay share, on a model and
// process states set by hand.
func TestPreconditionsWithoutAServer(t *testing.T) {
	workers := []string{"w1", "w2", "w3"}
	r, procs := offlineRun(t, "../testdata/correct/leased_renew.sql", workers,
		model.Op{Kind: model.Enqueue, Event: "e1"},
		model.Op{Kind: model.Enqueue, Event: "e2"},
		model.Op{Kind: model.ClaimOp, Worker: "w1"}, // e1, claim 1
		model.Op{Kind: model.Begin, Worker: "w2"},   // e2, in an open transaction
	)
	complete := func(w string) model.Op {
		return model.Op{Kind: model.Complete, Worker: w, Event: "e1", Gen: 1, Claim: 1}
	}
	may := func(op model.Op) error { return r.mayRun(op) }
	for _, c := range []struct {
		op   model.Op
		want bool // whether op may run
	}{
		{model.Op{Kind: model.Enqueue, Event: "e3"}, true},
		{model.Op{Kind: model.Enqueue, Event: "e4"}, false}, // not the next event
		{model.Op{Kind: model.ClaimOp, Worker: "w1"}, true},
		{model.Op{Kind: model.ClaimOp, Worker: "w2"}, false}, // inside its transaction
		{model.Op{Kind: model.Commit, Worker: "w2"}, true},
		{model.Op{Kind: model.Commit, Worker: "w1"}, false},
		{complete("w1"), true},
		{complete("w3"), false}, // never received it
		{model.Op{Kind: model.Renew, Worker: "w1", Event: "e1", Gen: 1, Claim: 1}, true},
		{model.Op{Kind: model.Expire, Event: "e1"}, true},
		{model.Op{Kind: model.Expire, Event: "e2"}, false},  // locked by w2's open transaction
		{model.Op{Kind: model.MakeDue, Event: "e1"}, false}, // not waiting for a backoff
		{model.Op{Kind: model.Age, Event: "e1"}, true},      // outbox_lab's own fixtures age
		{model.Op{Kind: model.Age, Event: "e2"}, false},     // locked
		{model.Op{Kind: model.Rescue}, false},               // no rescue section
		{model.Op{Kind: model.Pause, Worker: "w3"}, true},
		{model.Op{Kind: model.Resume, Worker: "w3"}, false},
		{model.Op{Kind: model.Respawn, Worker: "w3"}, false},
		{model.Op{Kind: model.EndSession, Worker: "w1"}, false}, // not lease=session
		{model.Op{Kind: model.Restart}, false},                  // no faults attached
		{model.Op{Kind: model.Flush}, false},
	} {
		if err := may(c.op); (err == nil) != c.want {
			t.Errorf("%v: may run %v (%v), want %v", c.op, err == nil, err, c.want)
		}
	}

	// A paused worker sends nothing; pausing or killing the last running
	// worker is not drawn.
	procs.paused["w1"] = true
	r.dead["w3"] = true
	for _, c := range []struct {
		op   model.Op
		want bool
	}{
		{model.Op{Kind: model.ClaimOp, Worker: "w1"}, false},
		{complete("w1"), false},
		{model.Op{Kind: model.Resume, Worker: "w1"}, true},
		{model.Op{Kind: model.Respawn, Worker: "w3"}, true},
		{model.Op{Kind: model.Kill, Worker: "w3"}, false},
		{model.Op{Kind: model.Pause, Worker: "w2"}, false}, // no other worker runs
		{model.Op{Kind: model.Kill, Worker: "w1"}, true},   // w2 runs on
	} {
		if err := may(c.op); (err == nil) != c.want {
			t.Errorf("w1 paused, w3 dead: %v: may run %v (%v), want %v", c.op, err == nil, err, c.want)
		}
	}

	// A worker whose step waits takes no other step until the wait ends.
	procs.paused["w1"], r.dead["w3"] = false, false
	r.waiting = &model.Op{Kind: model.Complete, Worker: "w3", Event: "e2", Gen: 1, Claim: 2}
	for _, op := range []model.Op{{Kind: model.ClaimOp, Worker: "w3"}, {Kind: model.Pause, Worker: "w3"}} {
		if err := may(op); !errors.Is(err, errBusy) {
			t.Errorf("%v while w3's step waits: %v, want %v", op, err, errBusy)
		}
	}
}

// TestReplayTakesOnlyKindsOfSteps: every kind a program holds has its
// precondition and its run; the harness's own kinds have none.
func TestReplayTakesOnlyKindsOfSteps(t *testing.T) {
	for _, k := range []model.Kind{model.Enqueue, model.ClaimOp, model.Begin, model.Commit, model.Rollback,
		model.Complete, model.Retry, model.Renew, model.Rescue, model.Pause, model.Resume, model.Kill,
		model.Respawn, model.EndSession, model.Expire, model.MakeDue, model.Age, model.Restart,
		model.Crash, model.Failover, model.Flush, model.Stall} {
		if sk, ok := stepKindOf(k); !ok || sk.may == nil || sk.run == nil {
			t.Errorf("%s: no step kind", k)
		}
	}
	if _, ok := stepKindOf(model.Kind("Nothing")); ok {
		t.Error("a kind no program holds has a step kind")
	}
}
