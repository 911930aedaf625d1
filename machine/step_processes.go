package machine

import (
	"fmt"

	"github.com/outboxlab/outboxlab/model"
	"pgregory.net/rapid"
)

// What happens to a worker's process: Pause (SIGSTOP), Resume, Kill
// (SIGKILL, its server backend ended), Respawn.

// othersRunning reports whether a worker other than w is running: pause
// and kill keep one, so that some action is always possible and rapid does
// not give up on a program where every worker is stopped.
func (r *run) othersRunning(w string) bool {
	for _, o := range r.workers {
		if o != w && r.running(o) {
			return true
		}
	}
	return false
}

func (r *run) pause(t *rapid.T) {
	w := pick(t, "worker", r.workersWhere(func(w string) bool { return r.mayStop(model.Op{Kind: model.Pause, Worker: w}) == nil }))
	r.runOp(model.Op{Kind: model.Pause, Worker: w})
}

func (r *run) resume(t *rapid.T) {
	w := pick(t, "worker", r.workersWhere(func(w string) bool { return r.mayResume(w) == nil }))
	r.runOp(model.Op{Kind: model.Resume, Worker: w})
}

func (r *run) killAction(t *rapid.T) {
	w := pick(t, "worker", r.workersWhere(func(w string) bool { return r.mayStop(model.Op{Kind: model.Kill, Worker: w}) == nil }))
	r.runOp(model.Op{Kind: model.Kill, Worker: w})
}

func (r *run) respawn(t *rapid.T) {
	w := pick(t, "worker", r.workersWhere(func(w string) bool { return r.mayRespawn(w) == nil }))
	r.runOp(model.Op{Kind: model.Respawn, Worker: w})
}

// mayStop: a pause or a kill keeps another worker running, so that some
// action is always possible and rapid does not give up on a program where
// every worker is stopped.
func (r *run) mayStop(op model.Op) error {
	w := op.Worker
	switch {
	case r.busy(w):
		return fmt.Errorf("%s: %w", w, errBusy)
	case !r.alive(w) || op.Kind == model.Pause && !r.running(w):
		return fmt.Errorf("%s is not running", w)
	case !r.othersRunning(w):
		return fmt.Errorf("no worker but %s is running", w)
	}
	return nil
}

// mayResume: a resume needs a paused worker.
func (r *run) mayResume(w string) error {
	switch {
	case r.busy(w):
		return fmt.Errorf("%s: %w", w, errBusy)
	case !r.alive(w) || r.running(w):
		return fmt.Errorf("%s is not paused", w)
	}
	return nil
}

// mayRespawn: a respawn needs a killed worker.
func (r *run) mayRespawn(w string) error {
	switch {
	case r.busy(w):
		return fmt.Errorf("%s: %w", w, errBusy)
	case r.alive(w):
		return fmt.Errorf("%s is alive", w)
	}
	return nil
}

func runSignal(r *run, op model.Op) model.Outcome {
	return r.exec(op, func() model.Outcome { return r.runSignal(op.Worker, op.Kind) })
}

func init() {
	registerStep(stepKind{(*run).mayStop, runSignal}, model.Pause, model.Kill)
	registerStep(stepKind{func(r *run, op model.Op) error { return r.mayResume(op.Worker) }, runSignal}, model.Resume)
	registerStep(stepKind{func(r *run, op model.Op) error { return r.mayRespawn(op.Worker) }, runSignal}, model.Respawn)
}
