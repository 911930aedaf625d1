package machine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
)

// The run* functions perform one step against the real system and return
// what was observed, in the model's terms.

func (r *run) runEnqueue(e string) model.Outcome {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st := r.h.Inst.Driver()
	var err error
	r.h.timed(func() { err = st.Exec(ctx, r.h.Inst.Conn, sut.Enqueue, sut.Args{EventID: e, Worker: "harness"}) })
	if err != nil {
		r.failStep(model.Op{Kind: model.Enqueue, Event: e}, "enqueue failed", fmt.Sprintf("Enqueue(%s) failed: %v", e, err))
	}
	return model.Outcome{Kind: model.OK}
}

func (r *run) runClaim(op model.Op) model.Outcome {
	req := worker.Request{Op: "claim"}
	if op.Kind == model.Begin {
		req = worker.Request{Op: "begin", ID: r.ids[op.Event]} // Begin(expire e) names e
	}
	return r.claimAnswer(r.request(op.Worker, req, op))
}

// claimAnswer is a claim's outcome from its worker's answer: unknown when
// a fault hit it, else its rows (a whole claim's, or a split claim's last
// part's).
func (r *run) claimAnswer(resp worker.Response, unknown bool) model.Outcome {
	if unknown {
		return model.Outcome{Kind: model.Unknown}
	}
	return r.claimOutcome(resp.Rows)
}

// claimOutcome is a claim's rows as the model's outcome: in enqueue order
// (a batch may come back in any order; an event never enqueued goes
// last), with the id of each kept for its outcome steps.
func (r *run) claimOutcome(rows []worker.ClaimRow) model.Outcome {
	if len(rows) == 0 {
		return model.Outcome{Kind: model.Empty}
	}
	s := r.model()
	order := func(e string) int {
		if i := rowIndex(s, e); i >= 0 {
			return i
		}
		return len(s.Rows)
	}
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b worker.ClaimRow) int { return cmp.Compare(order(a.Event), order(b.Event)) })
	r.claimedIDs = map[string]string{}
	out := model.Outcome{Kind: model.Claimed, Event: rows[0].Event, Gen: rows[0].Gen}
	for i, row := range rows {
		r.claimedIDs[row.Event] = row.ID
		r.noteClaimed(row.Event, row.Token)
		if i > 0 {
			out.More = append(out.More, model.Grant{Event: row.Event, Gen: row.Gen})
		}
	}
	return out
}

// runRescue runs the rescue section on the rescuer's own process: a
// separate actor, as a library's reaper is, whose statement may block or
// fail like any worker's.
func (r *run) runRescue() model.Outcome {
	_, unknown := r.request(rescuer, rescueRequest, model.Op{Kind: model.Rescue})
	return okOrUnknown(unknown)
}

// rescueRequest is the rescuer's one request: its rescue section.
var rescueRequest = worker.Request{Op: "rescue"}

// okOrUnknown is the outcome of a step that answers nothing but whether it
// ran: ok, or unknown when a fault hit it.
func okOrUnknown(unknown bool) model.Outcome {
	if unknown {
		return model.Outcome{Kind: model.Unknown}
	}
	return model.Outcome{Kind: model.OK}
}

// rescuer is the rescue actor's name: its process's @worker.
const rescuer = model.Rescuer

func (r *run) runEndTx(w string, kind model.Kind) model.Outcome {
	op := "commit"
	if kind == model.Rollback {
		op = "rollback"
	}
	_, unknown := r.request(w, worker.Request{Op: op}, model.Op{Kind: kind, Worker: w})
	return okOrUnknown(unknown)
}

func (r *run) runOutcome(op model.Op) model.Outcome {
	return r.outcomeOf(r.request(op.Worker, r.outcomeRequest(op), op))
}

// outcomeRequest is a complete's, retry's or renew's request: sent with
// the id its claim returned.
func (r *run) outcomeRequest(op model.Op) worker.Request {
	c := r.claimOf(op)
	id, ok := r.claimIDs[c.ID]
	if !ok {
		r.t.Fatalf("harness: %v: %s never received that claim", op, op.Worker) // the action's bug
	}
	return worker.Request{Op: strings.ToLower(string(op.Kind)), ID: id, Gen: op.Gen, Token: r.tokenOf(c)}
}

// request sends one request to a worker and sorts out what an error means.
// An outcome is unknown only when a fault hit this step: an injected
// network fault, or a server restart that broke the connection of this
// worker while it was paused (it finds out now). Every other error is the
// protocol's failure, named: a statement that waited on a lock, a server
// error, a result the format forbids (two rows from a claim, a NULL
// generation), a connection the protocol's own statement lost.
func (r *run) request(w string, req worker.Request, op model.Op) (worker.Response, bool) {
	p := r.h.pool.Get(w)
	faulted := r.faultPending || r.h.pool.Stale(w)
	var resp worker.Response
	var err error
	r.h.timed(func() { resp, err = p.DoWatched(req, lockProbeInterval, r.h.waitsOnLock) })
	r.h.pool.Used(w)
	if err == nil && p.External() {
		r.checkOneConnection(w, p, op)
	}
	return r.answer(w, op, resp, err, faulted)
}

// answer sorts out what a worker's answer to op, or its error, means (see
// request); faulted says whether a fault hit the step.
func (r *run) answer(w string, op model.Op, resp worker.Response, err error, faulted bool) (worker.Response, bool) {
	name := sut.RuleName(op.Kind)
	tail := stderrOf(r.h.pool.Get(w)) // before a kill takes the process
	if errors.Is(err, worker.ErrBlocked) || errors.Is(err, worker.ErrHung) {
		// Its late answer would be read as the next one's: it must go.
		r.h.kill(w)
		r.dead[w] = true
		switch {
		case errors.Is(err, worker.ErrBlocked):
			r.failStep(op, name+" blocked", fmt.Sprintf("%v waited on a lock %s held (claims must skip locked rows; the machine sends an outcome to a locked row only as a waiting step)", op, holderOf(err)))
		case faulted:
			// A cut connection the worker never noticed: as a kill, its
			// transaction rolls back, and what it sent is unknown.
			return resp, true
		}
		r.failStep(op, name+" timed out", fmt.Sprintf("%v did not return in %v, not waiting on any lock%s", op, r.h.Cfg.OpTimeout, tail))
	}
	var broke *worker.ContractError
	if errors.As(err, &broke) {
		// A worker executable that broke the contract is of no further use.
		r.h.kill(w)
		r.dead[w] = true
		r.fail(name+": the worker broke the worker protocol: "+broke.Problem, fmt.Sprintf("%v: %v", op, broke))
	}
	if err != nil {
		r.t.Fatalf("harness: %v: %v", op, err)
	}
	switch {
	case resp.Err == "":
		return resp, false
	case resp.Protocol:
		r.failStep(op, resp.BrokenRule(), fmt.Sprintf("%v failed: %s%s", op, resp.Err, tail))
	case resp.ServerErr:
		r.failStep(op, name+" failed with a server error", fmt.Sprintf("%v failed: %s%s", op, resp.Err, tail))
	case faulted:
		return resp, true
	case resp.Timeout:
		r.failStep(op, name+" timed out", fmt.Sprintf("%v did not return in %v, not waiting on any lock", op, r.h.Cfg.OpTimeout))
	}
	r.failStep(op, name+" lost its connection with no fault injected", fmt.Sprintf("%v lost its connection, and no fault was injected: %s%s", op, resp.Err, tail))
	return resp, true
}

// holderOf names the holder of the lock a blocked statement waited for.
func holderOf(err error) string {
	var blocked *worker.BlockedError
	switch {
	case !errors.As(err, &blocked) || blocked.By == "":
	case blocked.By == rescuer:
		return "the rescuer"
	default:
		return blocked.By
	}
	return "another session"
}

// lockProbeInterval is how often the harness asks the server whether a
// worker's statement waits on a lock while it has not answered.
const lockProbeInterval = 50 * time.Millisecond

func (r *run) runSignal(w string, kind model.Kind) model.Outcome {
	var err error
	switch kind {
	case model.Pause:
		err = r.h.pool.Get(w).Pause()
	case model.Resume:
		err = r.h.pool.Get(w).Resume()
	case model.Kill:
		if r.holdsNothing(w) {
			r.h.pool.KillIdle(w)
		} else {
			err = r.h.kill(w)
		}
		r.dead[w] = true
	case model.Respawn:
		err = r.h.pool.Spawn(w)
		r.dead[w] = err != nil
	}
	if err != nil {
		r.t.Fatalf("harness: %s %s: %v", kind, w, err)
	}
	return model.Outcome{Kind: model.OK}
}

// ageFraction is how much of the declared lease one Age takes off the
// deadline: a lease of the declared length outlives one Age and not two, a
// lease shorter than 60% of it expires at the first.
const ageFraction = 0.6

func (r *run) runFixture(kind model.Kind, e string) model.Outcome {
	section := map[model.Kind]string{model.Expire: sut.Expire, model.MakeDue: sut.Due, model.Age: sut.Age}[kind]
	args := sut.Args{ID: r.ids[e], Worker: "harness"}
	if kind == model.Age {
		args.Seconds = ageFraction * r.h.Inst.Proto.Lease.Seconds()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var err error
	r.h.timed(func() {
		err = r.h.Inst.Driver().Exec(ctx, r.h.Inst.Conn, section, args)
	})
	if err != nil {
		r.failStep(model.Op{Kind: kind, Event: e}, section+" fixture failed", fmt.Sprintf("%s(%s) failed: %v", kind, e, err))
	}
	return model.Outcome{Kind: model.OK}
}
