package concurrent

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
)

// drive is worker a's part of a history. The worker process draws and
// runs its operations by itself (worker.OpDrive: claims in autocommit and
// in open transactions, completes, retries and renews, the stale ones
// aimed at reclaims held open), recording each on the board, and this
// goroutine only waits for it to finish, ending on the way any backend a
// fault cut that the worker asks it to. When the fault loop kills the
// process, its records are taken, the operation it was running is ended
// here (its backend gone, its outcome unknown), and a new process takes
// the rest of the budget, remembering no claim. A worker executable serves
// no drive: the parent makes its draws and sends them one at a time
// (parentOps).
func (h *history) drive(a *actor, stream uint64, rng *rand.Rand) {
	req := worker.DriveRequest{Stream: stream, Hold: h.r.cfg.Hold, Renew: h.r.inst.Proto.Has(sut.Renew),
		NoTx: !h.r.inst.Proto.Has(sut.Tx)}
	if h.r.inst.Statements.Worker != nil {
		req.Seed = rng.Uint64()
		worker.Drawer{Board: h.board, Slot: a.slot.Index(), Name: a.name, HasGen: h.hasGen(), Req: req}.Draw(parentOps{h, a})
		return
	}
	for h.board.Left() {
		p := a.process()
		if p == nil { // no process can start while the server restarts
			time.Sleep(20 * time.Millisecond)
			continue
		}
		req.Seed = rng.Uint64()
		resp, err := p.Drive(worker.Request{Op: worker.OpDrive, Drive: &req}, h.driveLimit(),
			func(backend uint32, epoch int64) { h.endBackend(worker.Backend{PID: backend}, epoch) })
		killed := err != nil && a.killed.Load() == int64(p.Pid())
		if err != nil {
			a.discard(p) // dead, or hung: killed now
		} else {
			a.stale = resp.Backend == 0
		}
		open := h.collect(a, killed)
		if killed {
			h.board.ClearHintsOf(a.slot.Index()) // its transaction went with it
		}
		// A failure the worker saw is on the board even when a kill took
		// its answer.
		if rule, detail, failed := a.slot.Failure(); failed {
			h.fail(rule, detail)
			return
		}
		switch {
		case err == nil && resp.Drive != nil:
			h.fail(resp.Drive.Rule, resp.Drive.Detail)
			return
		case err == nil && resp.Err != "":
			h.fail("harness error", fmt.Sprintf("%s could not drive: %s", a.name, resp.Err))
			return
		case err == nil:
			return // the budget is spent
		case killed:
			h.backOff()
		case errors.Is(err, worker.ErrHung):
			h.fail("worker did not finish its history", fmt.Sprintf("%s did not answer in %v", a.name, h.driveLimit()))
			return
		case open != nil:
			op := model.Op{Kind: open.Kind, Worker: a.name}
			h.fail(sut.RuleName(open.Kind)+" lost its worker with no fault injected", fmt.Sprintf("%v: %v", op, err))
			return
		default:
			h.fail("worker lost with no fault injected", fmt.Sprintf("%s: %v", a.name, err))
			return
		}
	}
}

// driveLimit is how long a drive may take: the rest of the history, the
// ten seconds a worker tries to reconnect after it, and one of the
// parent's longest waits for a backend to end, with a margin. Only a
// worker that hangs comes near it.
func (h *history) driveLimit() time.Duration {
	return h.untilEnd() + 10*time.Second + 30*time.Second + h.r.cfg.OpTimeout + 5*time.Second
}

// collect takes the records a's process wrote since the last collect into
// the history. An operation called and never returned (the process was
// killed or hung, or its question to end a cut backend went unanswered)
// is unknown, once its backend is gone; it is returned, if there is one.
func (h *history) collect(a *actor, killed bool) (open *worker.Record) {
	recs := a.slot.Records()
	for i := a.collected; i < len(recs); i++ {
		r := recs[i]
		if r.Open {
			h.endBackend(worker.Backend{PID: r.Backend}, r.Epoch)
			r.Return, r.Out, r.Fault = worker.MonoNow(), model.Unknown, "connection cut"
			if killed {
				r.Fault = "cut or killed"
			}
			recs[i] = r
			open = &recs[i]
		}
		h.rec.add(operationOf(a, r))
	}
	a.collected = len(recs)
	return open
}

// operationOf is a worker's record as an operation of the history.
func operationOf(a *actor, r worker.Record) porcupine.Operation {
	op := model.Op{Kind: r.Kind, Worker: a.name, Gen: r.Gen}
	if r.Event > 0 {
		op.Event = worker.EventName(r.Event)
	}
	out := model.Outcome{Kind: r.Out}
	for k, g := range r.Grants {
		if k == 0 {
			out.Event, out.Gen = worker.EventName(g.Event), g.Gen
			continue
		}
		out.More = append(out.More, model.Grant{Event: worker.EventName(g.Event), Gen: g.Gen})
	}
	in := Input{Op: op}
	if r.Out == model.Unknown {
		in.Fault = r.Fault
	}
	return porcupine.Operation{ClientId: a.client, Input: in, Output: Output{Out: out}, Call: r.Call, Return: r.Return}
}
