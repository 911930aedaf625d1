package machine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/worker"
	"pgregory.net/rapid"
)

// A commit stuck behind a stalled synchronous standby (PROTOCOL-FORMAT.md,
// "Version 3", sync-standby): the primary has written it and waits for
// the standby to confirm it, the standby never receives it, and the
// primary dies. The worker gets an error; the promoted standby does not
// have the commit. No acknowledged commit is lost, but the worker does not
// know its step's outcome: it is unknown, and the next read decides, as
// for a lost reply.

// ActStuckCommit is the comment that marks such a step in a program, and
// its Step.Fault.
const ActStuckCommit = "stuck_commit"

// stuckFailover is sync-standby's db_restart with a worker's step caught
// in the failover: replication stalls, the step (a claim, a commit, a
// complete, retry or renew, as faultTarget draws it) is sent, and once
// the server shows its commit waiting on the standby the primary fails
// over. A step that answers without waiting (a claim that found nothing
// commits no write) is judged as it answered, and the failover follows.
func (r *run) stuckFailover(t *rapid.T) { r.stuckCommit(r.faultTarget(t)) }

// stuckCommit is stuckFailover's step and failover for op: drawn, or a
// replayed program's step marked stuck_commit. The program's Failover()
// line after it is this failover: a replay does not run it again.
func (r *run) stuckCommit(op model.Op) {
	w := op.Worker
	if err := r.h.connected(w); err != nil {
		r.t.Fatalf("harness: %s before %s: %v", w, ActStuckCommit, err)
	}
	r.serverCall(model.Op{Kind: model.Stall}, func(ctx context.Context) error {
		if err := r.h.Faults.MarkDurable(ctx); err != nil {
			return err
		}
		return r.h.Faults.Stall(ctx)
	})
	r.stalled = true
	p := r.h.pool.Get(w)
	var resp worker.Response
	var err error
	r.h.timed(func() { resp, err = p.StartWatched(r.stepRequest(op), lockProbeInterval/10, r.h.waitsOnStandby) })
	r.h.pool.Used(w)
	prefix := fmt.Sprintf("%3d. ", r.stepNumber())
	if !errors.Is(err, worker.ErrBlocked) {
		r.exec(op, func() model.Outcome { return r.outcomeFromAnswer(op, resp, err, false) })
		r.rewindStep(model.Op{Kind: model.Failover}, r.runFailover)
		return
	}
	r.failoverServer() // the stuck commit's server dies under it
	r.h.timed(func() { resp, err = p.AwaitWaiting() })
	// Only now: a reconnect sent to w before its answer is read would be
	// answered in its place.
	r.reconnectAll("failover")
	r.fault, r.faultPending = ActStuckCommit, true
	got := r.outcomeFromAnswer(op, resp, err, true)
	next, _ := r.judge(op, got, prefix)
	r.fault, r.faultPending = "", false
	r.states = next
	r.h.Coverage.add(CovStuckCommit)
	failover := model.Op{Kind: model.Failover}
	defer r.traceBegin(failover)()
	r.h.mu.Lock()
	r.h.steps++
	r.h.mu.Unlock()
	r.serverFaultEnded(failover)
}

// stepRequest is the request of a worker's step as runStep sends it.
func (r *run) stepRequest(op model.Op) worker.Request {
	switch op.Kind {
	case model.ClaimOp:
		return worker.Request{Op: "claim"}
	case model.Commit:
		return worker.Request{Op: "commit"}
	}
	return r.outcomeRequest(op)
}

// outcomeFromAnswer is what a worker's answer to op means in the model's
// terms (see answer): unknown when a fault hit it.
func (r *run) outcomeFromAnswer(op model.Op, resp worker.Response, err error, faulted bool) model.Outcome {
	resp, unknown := r.answer(op.Worker, op, resp, err, faulted)
	switch {
	case unknown:
		return model.Outcome{Kind: model.Unknown}
	case op.Kind == model.ClaimOp:
		return r.claimOutcome(resp.Rows)
	case op.Kind == model.Commit:
		return model.Outcome{Kind: model.OK}
	}
	return r.outcomeOf(resp, false)
}

// waitsOnStandby asks the server whether a commit waits for the
// synchronous standby. Any backend's will do: the step is the only
// statement in flight (no step waits while a server fault runs), and the
// worker's backend the pool knows may be one a reconnect has replaced.
// It must be seen: a commit whose wait the worker's own timeout cancels
// returns success, committed on the primary alone, and a failover then
// loses an acknowledged commit.
func (h *Harness) waitsOnStandby(worker.Backend) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var waits bool
	err := h.Inst.Conn.QueryRow(ctx, "SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event = 'SyncRep'").Scan(&waits)
	if err != nil || !waits {
		return ""
	}
	return "the synchronous standby"
}
