package machine

import (
	"fmt"

	"github.com/outboxlab/outboxlab/model"
)

// stepKind is what the machine knows of one kind of step: when it may run
// (its precondition, preconditions.go) and how it runs. A draw
// (actions.go) picks an op among those whose precondition holds and runs
// it through here; a replay (replay.go) holds a recorded op to the same
// precondition and runs it the same way. How a step prints and parses is
// the model's (model.FormatStep, ParseProgram); the faults that may hit a
// step are its Fault field (faultsteps.go), and a split's parts are split.go's.
type stepKind struct {
	may func(r *run, op model.Op) error
	run func(r *run, op model.Op) model.Outcome
}

// stepKindOf is k's stepKind; false for a kind no program holds.
func stepKindOf(k model.Kind) (stepKind, bool) {
	switch k {
	case model.Enqueue:
		return stepKind{(*run).mayEnqueue, func(r *run, op model.Op) model.Outcome {
			r.nextEvent++
			return r.exec(op, func() model.Outcome { return r.runEnqueue(op.Event) })
		}}, true
	case model.ClaimOp, model.Begin:
		return stepKind{func(r *run, op model.Op) error {
			if err := r.mayClaim(op); err != nil {
				return err
			}
			return r.canReplayExpiring(op)
		}, func(r *run, op model.Op) model.Outcome {
			return r.exec(op, func() model.Outcome { return r.runClaim(op) })
		}}, true
	case model.Commit, model.Rollback:
		return stepKind{func(r *run, op model.Op) error { return r.mayEndTx(op.Worker) }, func(r *run, op model.Op) model.Outcome {
			return r.exec(op, func() model.Outcome { return r.runEndTx(op.Worker, op.Kind) })
		}}, true
	case model.Complete, model.Retry, model.Renew:
		return stepKind{(*run).mayOutcome, func(r *run, op model.Op) model.Outcome {
			return r.exec(op, func() model.Outcome { return r.runOutcome(op) })
		}}, true
	case model.Rescue:
		return stepKind{func(r *run, _ model.Op) error { return r.mayRescue() }, func(r *run, op model.Op) model.Outcome {
			return r.exec(op, func() model.Outcome { return r.runRescue() })
		}}, true
	case model.Pause, model.Kill:
		return stepKind{(*run).mayStop, runSignal}, true
	case model.Resume:
		return stepKind{func(r *run, op model.Op) error { return r.mayResume(op.Worker) }, runSignal}, true
	case model.Respawn:
		return stepKind{func(r *run, op model.Op) error { return r.mayRespawn(op.Worker) }, runSignal}, true
	case model.EndSession:
		return stepKind{func(r *run, op model.Op) error { return r.mayEndSession(op.Worker) }, func(r *run, op model.Op) model.Outcome {
			r.endSession(op.Worker)
			return r.lastOut
		}}, true
	case model.Expire, model.MakeDue, model.Age:
		return stepKind{(*run).mayFixture, func(r *run, op model.Op) model.Outcome {
			return r.exec(op, func() model.Outcome { return r.runFixture(op.Kind, op.Event) })
		}}, true
	case model.Restart, model.Crash, model.Failover:
		return stepKind{(*run).mayServerFault, func(r *run, _ model.Op) model.Outcome {
			r.serverFault()
			return r.lastOut
		}}, true
	case model.Flush, model.Stall:
		return stepKind{(*run).mayDurable, func(r *run, op model.Op) model.Outcome {
			r.runDurable(op)
			return r.lastOut
		}}, true
	}
	return stepKind{}, false
}

func runSignal(r *run, op model.Op) model.Outcome {
	return r.exec(op, func() model.Outcome { return r.runSignal(op.Worker, op.Kind) })
}

// runOp runs one op the way its action would have, and returns its
// outcome: a drawn step, a replayed one, the race action's waiting step
// (an outcome or a rescue), the drain's.
func (r *run) runOp(op model.Op) model.Outcome {
	op = r.withClaim(op)
	switch {
	case op.Part.First():
		r.runSplitFirst(op)
	case op.Part.Last():
		r.runSplitLast()
	default:
		k, ok := stepKindOf(op.Kind)
		if !ok {
			r.t.Fatalf("harness: %v: no such step", op)
		}
		return k.run(r, op)
	}
	return r.lastOut
}

// mayRun is op's precondition, or why no program holds such a step.
func (r *run) mayRun(op model.Op) error {
	k, ok := stepKindOf(op.Kind)
	if !ok {
		return fmt.Errorf("%s steps cannot be replayed", op.Kind)
	}
	return k.may(r, op)
}
