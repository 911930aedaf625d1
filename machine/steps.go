package machine

import (
	"errors"
	"fmt"

	"github.com/outboxlab/outboxlab/model"
)

// A kind of step is one file, step_*.go (the server's in serverfaults.go,
// a session's end in session.go): the action that draws it, its
// precondition on the run, and how it runs, registered here. The
// precondition has two users: the draw picks among the ops for which it
// holds, and a replay (replay.go) refuses, or skips, a recorded op for
// which it does not. Written twice, they drifted: a replay would send a
// step to a worker whose earlier step still waited, which no check ever
// draws. A precondition returns nil when op may run now, else why not.
//
// What stays a draw's alone is the draw's choice, not whether a step can
// run: which of a worker's claims is stale (outcome), the Age of a lease
// the clock has aged already (ageLeavesTime), the claims a split's race
// runs as its own steps. How a step prints and parses is the model's
// (model.FormatStep, ParseProgram); the faults that may hit a step are its
// Fault field (faultsteps.go), and a split's parts are split.go's. What is
// in flight, a waiting step or an open split, a kind reads through
// inFlight's questions (inflight.go), not its fields.

// stepKind is one kind of step's precondition and run; run returns the
// step's outcome.
type stepKind struct {
	may func(r *run, op model.Op) error
	run func(r *run, op model.Op) model.Outcome
}

// stepKinds holds every kind a program may hold, registered by the file
// of each (registerStep).
var stepKinds = map[model.Kind]stepKind{}

// registerStep makes k the stepKind of kinds.
func registerStep(k stepKind, kinds ...model.Kind) {
	for _, kind := range kinds {
		if _, dup := stepKinds[kind]; dup {
			panic(fmt.Sprintf("machine: %s registered twice", kind))
		}
		stepKinds[kind] = k
	}
}

// stepKindOf is k's stepKind; false for a kind no program holds.
func stepKindOf(k model.Kind) (stepKind, bool) {
	sk, ok := stepKinds[k]
	return sk, ok
}

// execStep is a stepKind's run for a step that goes through exec, with do
// what runs it against the real system.
func execStep(do func(r *run, op model.Op) model.Outcome) func(r *run, op model.Op) model.Outcome {
	return func(r *run, op model.Op) model.Outcome {
		return r.exec(op, func() model.Outcome { return do(r, op) })
	}
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

// processes is what a precondition reads of the worker processes
// (worker.Pool): which one a pause stopped, and which has a connection a
// server restart broke while it was paused (it answers its next statement
// with an error, so no step that needs an answer is sent to it).
type processes interface {
	Paused(name string) bool
	Stale(name string) bool
}

// errBusy is why a worker whose step waits on a lock takes no other step
// until the wait ends.
var errBusy = errors.New("its step waits on another worker's open transaction (wait.go)")

// blocks reports whether, in some state the model allows, op would wait
// on a lock an open transaction holds, or cannot run at all.
func (r *run) blocks(op model.Op) bool {
	for _, s := range r.states {
		if s.Blocks(op) || s.Precondition(op) != nil {
			return true
		}
	}
	return false
}
