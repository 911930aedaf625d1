package machine

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/pgserver"
	"pgregory.net/rapid"
)

// Replay runs p against the harness's protocol once, deterministically:
// the same setup, the same steps, each checked against the model and the
// persisted rows exactly as in a check, then the drain. It returns the
// violation (nil if the protocol held) and an error when the program
// cannot be replayed at all (a step the model does not allow to run).
// Afterwards Program and Failure describe the replay.
func (h *Harness) Replay(p Program) (*Violation, error) { return h.replay(p, strict) }

// ReplayLenient is Replay that skips the steps the machine could not have
// drawn at their point instead of refusing the program: what a shrinker
// wants of a program with steps taken out.
func (h *Harness) ReplayLenient(p Program) (*Violation, error) { return h.replay(p, lenient) }

// ReplayRebinding is ReplayLenient that first gives an outcome naming a
// claim its worker never received the generation of that worker's latest
// claim of the same event, if it has one, and after a claim that took
// another row than the program records, swaps the two rows' names in the
// steps after it (rebind.go): what a shrinker wants of a program whose
// earlier claims it took out, so that the later claims come back with
// other rows and generations.
func (h *Harness) ReplayRebinding(p Program) (*Violation, error) { return h.replay(p, rebinding) }

// replayMode is how a replay treats a step the machine could not have
// drawn at its point.
type replayMode int

const (
	strict    replayMode = iota // refuse the program
	lenient                     // skip the step
	rebinding                   // rebind an outcome's generation, else skip
)

// replay is Replay, ReplayLenient or ReplayRebinding, as mode says.
func (h *Harness) replay(p Program, mode replayMode) (*Violation, error) {
	// A replay draws nothing, so it needs no rapid engine: a zero rapid.T
	// serves the run's Fatalf, whose panic ends the replay as it ends a check.
	t := new(rapid.T)
	var harnessErr error
	func() {
		defer func() {
			if v := recover(); v != nil {
				if reflect.TypeOf(v).String() != "rapid.stopTest" {
					panic(v)
				}
				if h.Failure() == nil {
					harnessErr = fmt.Errorf("replay: %v", v)
				}
			}
		}()
		r := h.beginProgram(t, p.Workers, p.Events)
		stuck := false // the last step ran a stuck commit, its failover included
		steps := slices.Clone(p.Steps)
		for i := range steps {
			s := steps[i]
			op := s.Op
			if stuck && op.Kind == model.Failover {
				stuck = false
				continue
			}
			stuck = false
			if mode == rebinding {
				op = r.rebound(op)
			}
			err := r.canReplay(op)
			if err == nil && s.Fault != "" {
				err = r.canReplayFault(s.Fault)
			}
			if err != nil {
				if mode != strict {
					continue
				}
				harnessErr = &ReplayError{Step: i + 1, Op: op, Err: err}
				return
			}
			r.lastOut = model.Outcome{}
			switch s.Fault {
			case "":
				r.runOp(op)
			case ActStuckCommit:
				r.stuckCommit(r.withClaim(op))
				stuck = true
			default:
				r.faultedStep(r.withClaim(op), s.Fault)
			}
			r.noteReplayTokens(op, s.Out)
			if mode == rebinding {
				renameClaimed(steps[i+1:], s, r.lastOut)
			}
		}
		r.drain()
	}()
	return h.Failure(), harnessErr
}

// ReplayError is a program a strict replay refuses: its step Step (from
// 1) could not have been drawn at its point.
type ReplayError struct {
	Step int
	Op   model.Op
	Err  error
}

func (e *ReplayError) Error() string {
	return fmt.Sprintf("replay step %d, %v: %v", e.Step, e.Op, e.Err)
}

func (e *ReplayError) Unwrap() error { return e.Err }

// canReplayFault holds a step's fault to what the harness can inject, as
// networkFault and stuckFailover draw it: a lost request or reply needs
// the network faults, a stuck commit a synchronous standby to fail over
// to, and neither hits a step while another waits or a split is open.
func (r *run) canReplayFault(fault string) error {
	switch {
	case r.h.Faults == nil:
		return fmt.Errorf("the step's %s needs a harness with faults", fault)
	case r.inFlight.any():
		return fmt.Errorf("a step waits or a split is open: no %s until it ends", fault)
	case fault == ActStuckCommit && (r.h.Faults.ServerFault() != pgserver.FaultFailover || r.h.Faults.Rewinds()):
		return fmt.Errorf("a %s needs a synchronous standby to fail over to", fault)
	case !stepFaultName(fault):
		return fmt.Errorf("no fault %q", fault)
	}
	return nil
}

// beginProgram is begin with the setup given instead of drawn.
func (h *Harness) beginProgram(t *rapid.T, workers, events []string) *run {
	h.mu.Lock()
	h.program, h.recorded = nil, Program{}
	h.failure = nil
	h.mu.Unlock()
	r := &run{h: h, t: t, ids: map[string]string{}, claimIDs: map[int]string{}, received: map[[2]string]receivedClaim{}, rescued: map[string]bool{}, dead: map[string]bool{}, workers: workers, procs: h.pool}
	if err := h.preparePool(r.workers); err != nil {
		t.Fatalf("harness: %v", err)
	}
	state := model.NewWith(h.policy())
	for _, e := range events {
		state = state.Step(model.Op{Kind: model.Enqueue, Event: e})[0].Next
	}
	r.nextEvent = len(events)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	h.timed(func() {
		if err = h.prepareServer(ctx); err == nil {
			err = h.Inst.Reset(ctx, events)
		}
		if err == nil {
			err = h.resetDurable(ctx)
		}
	})
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	r.states = []model.State{state}
	r.observe(model.Op{Kind: model.Enqueue, Event: strings.Join(events, ",")}, model.Outcome{Kind: model.OK})
	r.startRewindLog()
	r.log(fmt.Sprintf("setup: %d workers (%s), events %s", len(workers), strings.Join(workers, " "), strings.Join(events, " ")))
	r.recordSetup(workers, events)
	return r
}

// canReplay holds a recorded op to exactly what its action requires (the
// precondition its draw shares, steps.go), so that a replay, and a
// program shrunk by replaying, never runs a step the machine could not
// have drawn: a statement sent to a stopped process, an outcome with a
// claim the worker never received, a fixture on a row in the wrong state.
func (r *run) canReplay(op model.Op) error {
	w := op.Worker
	if w != "" && !slices.Contains(r.workers, w) {
		return fmt.Errorf("no worker %s in this program", w)
	}
	if err := r.canReplaySplit(op); err != nil || op.Part.Of > 0 {
		return err
	}
	if err := r.mayRun(op); err != nil {
		return err
	}
	for _, st := range r.states {
		if err := st.Precondition(op); err != nil {
			return err
		}
	}
	return nil
}
