package concurrent

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
)

// actor is one worker process (or the rescuer's) and the goroutine that
// drives it. The fault loop may kill or pause the process at any moment;
// the driving goroutine finds out from its next answer and respawns.
type actor struct {
	name   string
	client int // its lane in the history
	spec   worker.Spec
	mu     sync.Mutex
	proc   *worker.Process
	// slot is the actor's part of the run's board: the fault loop marks
	// it tainted when a fault may hit its next or current statement (each
	// operation takes the mark when it ends, so that an error is blamed on
	// a fault only if one was injected since the actor's previous
	// operation ended), and armed while a network fault is armed on its
	// proxy; a driving worker records its operations there.
	slot worker.Slot
	// collected is how many of the slot's records this history has taken.
	collected int
	// killed is the pid the fault loop last sent SIGKILL: an error of that
	// process is the kill's, whenever it shows.
	killed atomic.Int64
	// stale is set when the process's connection may be broken (a fault
	// cut it, or a drive ended without one): the parent's next operation
	// on it (the drain's, the rescuer's) reconnects first, so that the
	// parent knows the backend it may have to end.
	stale bool
}

// faulted takes the taint at the end of an operation: whether a fault may
// explain its error (worker.Slot.Faulted).
func (a *actor) faulted() bool { return a.slot.Faulted() }

// process is the actor's live process, spawned anew if it has none
// (killed); nil while no process can be started (a server restart).
func (a *actor) process() *worker.Process {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.proc != nil {
		return a.proc
	}
	p, err := worker.Spawn(a.spec)
	if err != nil {
		return nil
	}
	a.proc = p
	a.slot.SetBackend(p.Backend)
	return p
}

// target is the process the fault loop may kill or pause: its pid and the
// server backend of its connection (0 and none without one). A Go worker's
// is the pid it last published on the board (a driving worker reconnects
// by itself); a worker executable's is found by its application_name.
func (a *actor) target() (pid int, backend worker.Backend) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.proc == nil:
		return 0, worker.Backend{}
	case a.proc.External():
		return a.proc.Pid(), a.proc.ServerBackend()
	}
	return a.proc.Pid(), worker.Backend{PID: a.slot.Backend()}
}

// discard kills the process p (if it is still the actor's) and forgets it.
func (a *actor) discard(p *worker.Process) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.proc == p && p != nil {
		p.Kill()
		a.proc = nil
		a.stale = false // the next process connects afresh
	}
}

func (a *actor) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.proc != nil {
		a.proc.Kill()
		a.proc = nil
	}
}

// reset readies the process for a new history with op: "reconnect", a
// fresh connection (a fault at the end of the last history may have broken
// the old one unnoticed), or "reset", no transaction left open; a process
// that does not answer is replaced.
func (a *actor) reset(op string) error {
	for try := 0; try < 3; try++ {
		p := a.process()
		if p == nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		resp, err := p.Do(worker.Request{Op: op})
		if err == nil && resp.Err == "" {
			a.slot.ClearTaint()
			a.slot.SetBackend(p.Backend)
			a.stale = false
			return nil
		}
		a.discard(p)
	}
	return fmt.Errorf("worker %s could not be reset", a.name)
}

// do runs one request as the recorded operation op and returns its
// outcome and the worker's response. ok is false when the history must
// stop: the protocol failed (h.fail has the rule), or no process could be
// started.
func (h *history) do(a *actor, op model.Op, req worker.Request) (out model.Outcome, resp worker.Response, ok bool) {
	p := a.process()
	if p == nil || a.stale && !h.reconnect(a, p) {
		return model.Outcome{}, worker.Response{}, false
	}
	backend, epoch := p.ServerBackend(), h.epoch.Load()
	call := h.rec.call(a.client, Input{Op: op})
	resp, err := p.Do(req)
	a.slot.SetBackend(p.Backend)
	faulted := a.faulted() || h.epoch.Load() != epoch || err != nil && a.killed.Load() == int64(p.Pid())
	name := sut.RuleName(op.Kind)
	if err != nil {
		// Killed, or hung on a cut connection: unknown once its backend
		// is gone (until then its statement may still commit).
		a.discard(p)
		h.endBackend(backend.Exited(), epoch)
		h.rec.ret(call, Output{Out: model.Outcome{Kind: model.Unknown}})
		switch {
		case faulted:
			h.rec.fault(call, "cut or killed")
			h.backOff()
			return model.Outcome{Kind: model.Unknown}, resp, true
		case errors.Is(err, worker.ErrHung):
			return h.fail(name+" timed out", fmt.Sprintf("%v did not return in %v with no fault injected", op, h.r.cfg.OpTimeout))
		}
		return h.fail(name+" lost its worker with no fault injected", fmt.Sprintf("%v: %v", op, err))
	}
	fate, rule, detail := worker.Judge(op, resp, faulted)
	switch fate {
	case worker.Known:
		out = outcomeOf(op, resp)
		h.rec.ret(call, Output{Out: out})
		return out, resp, true
	case worker.Lost:
		a.stale = true
		h.endBackend(backend, epoch)
		h.rec.ret(call, Output{Out: model.Outcome{Kind: model.Unknown}})
		h.rec.fault(call, "connection cut")
		h.backOff()
		return model.Outcome{Kind: model.Unknown}, resp, true
	}
	if !resp.Protocol && !resp.ServerErr {
		h.endBackend(backend, epoch)
	}
	h.rec.ret(call, Output{Out: model.Outcome{Kind: model.Unknown}})
	return h.fail(rule, detail)
}

// reconnect gives a worker whose connection a fault broke a new one
// before its next operation, so that the parent knows the new backend
// (the reply names it): a statement cut on a connection the worker made by
// itself would leave a backend nobody ends, its locks held. It tries until
// the history's time is up; false then, or when the process died.
func (h *history) reconnect(a *actor, p *worker.Process) bool {
	for h.untilEnd() > -10*time.Second {
		resp, err := p.Do(worker.Request{Op: "reconnect"})
		if err != nil {
			a.discard(p)
			return false
		}
		if resp.Err == "" {
			a.stale = false
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// backOff is what a worker does after a statement whose outcome it does
// not know: it waits a moment, and while the server restarts, until it is
// back (each unknown outcome doubles the states a history may be in).
func (h *history) backOff() {
	time.Sleep(3 * time.Millisecond)
	for h.restarting() && h.untilEnd() > 0 {
		time.Sleep(5 * time.Millisecond)
	}
}

// outcomeOf is a worker's answer in the model's terms; a claim's rows in
// enqueue order (a batch may come back in any order).
func outcomeOf(op model.Op, resp worker.Response) model.Outcome {
	switch op.Kind {
	case model.ClaimOp, model.Begin:
		if len(resp.Rows) == 0 {
			return model.Outcome{Kind: model.Empty}
		}
		rows := sortedRows(resp.Rows)
		out := model.Outcome{Kind: model.Claimed, Event: rows[0].Event, Gen: rows[0].Gen}
		for _, r := range rows[1:] {
			out.More = append(out.More, model.Grant{Event: r.Event, Gen: r.Gen})
		}
		return out
	case model.Complete, model.Retry, model.Renew:
		if resp.Applied {
			return model.Outcome{Kind: model.Applied}
		}
		return model.Outcome{Kind: model.Rejected}
	}
	return model.Outcome{Kind: model.OK}
}
