package machine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
	"pgregory.net/rapid"
)

// restartOdds makes db_restart rare: a restart costs about 0.1 s (the
// server's crash recovery, every worker reconnecting), and rapid draws it
// as often as any other action. It goes ahead only when its labelled draw
// is the top of the range, which rapid, favouring small values, picks
// about one time in twenty (some ten restarts in a default run); the
// shrunk program still shows the draw.
const restartOdds = 20

// rewindOdds is restartOdds on a topology that rewinds, where the fault
// is drawn only once an acknowledged commit could be lost (dbRestart).
const rewindOdds = 8

// networkFault runs one step of a worker with its connection cut: before
// the statement reaches the server (request lost) or after it ran and
// committed, on its way back (reply lost). The worker sees a connection
// error either way and learns nothing, as in production; the model keeps
// both successors and the next read through the harness's own connection
// decides.
func (r *run) networkFault(t *rapid.T, replyLost bool) {
	if r.inFlight.any() {
		t.Skip("a step waits or a split is open: no fault until it ends")
	}
	op := r.faultTarget(t)
	name := ActRequestLost
	if replyLost {
		name = ActReplyLost
	}
	r.faultedStep(op, name)
}

// faultedStep runs op with the network fault name (ActRequestLost,
// ActReplyLost) on its worker's connection: the step a networkFault drew,
// or a replayed program's step that the fault hit when it was recorded.
func (r *run) faultedStep(op model.Op, name string) {
	class, inject := CovRequestLost, r.h.Faults.LoseRequest
	if name == ActReplyLost {
		class, inject = CovReplyLost, r.h.Faults.LoseReply
	}
	w := op.Worker
	if err := r.h.connected(w); err != nil {
		r.t.Fatalf("harness: %s before %s: %v", w, name, err)
	}
	backend := r.h.pool.Get(w).ServerBackend()
	undo, err := inject(w)
	if err != nil {
		r.t.Fatalf("harness: %v", err)
	}
	defer undo()
	r.fault, r.faultPending = name, true
	defer func() { r.fault, r.faultPending = "", false }()
	got := r.exec(op, func() model.Outcome {
		out := r.runStep(op)
		if out.Kind == model.Unknown {
			r.endBackend(w, backend)
		}
		undo()
		return out
	})
	if got.Kind == model.Unknown {
		r.h.Coverage.add(class)
	}
}

// faultTarget draws the step a network fault hits: a claim, a commit, or a
// complete, retry or renew of a current claim, by a running worker.
func (r *run) faultTarget(t *rapid.T) model.Op {
	byKind := map[model.Kind][]model.Op{}
	add := func(op model.Op) {
		if !r.blocks(op) && r.serverConnFree(op.Worker) {
			byKind[op.Kind] = append(byKind[op.Kind], op)
		}
	}
	for _, w := range r.workersWhere(r.running) {
		if r.inTx(w) {
			add(model.Op{Kind: model.Commit, Worker: w})
		} else {
			add(model.Op{Kind: model.ClaimOp, Worker: w})
		}
	}
	s := r.model()
	for _, c := range s.Claims {
		if !s.IsCurrent(c) || !r.running(c.Worker) || r.inTx(c.Worker) {
			continue
		}
		for _, k := range []model.Kind{model.Complete, model.Retry, model.Renew} {
			if k != model.Renew || r.h.Inst.Proto.Has(sut.Renew) {
				add(model.Op{Kind: k, Worker: c.Worker, Event: c.Event, Gen: c.Gen, Claim: c.ID})
			}
		}
	}
	var kinds []model.Kind
	for _, k := range []model.Kind{model.ClaimOp, model.Commit, model.Complete, model.Retry, model.Renew} {
		if len(byKind[k]) > 0 {
			kinds = append(kinds, k)
		}
	}
	k := pick(t, "faulted", kinds)
	return pick(t, "step", byKind[k])
}

// runStep performs a worker's step of any kind.
func (r *run) runStep(op model.Op) model.Outcome {
	switch op.Kind {
	case model.ClaimOp, model.Begin:
		return r.runClaim(op)
	case model.Commit, model.Rollback:
		return r.runEndTx(op.Worker, op.Kind)
	}
	return r.runOutcome(op)
}

// endBackend ends the server side of a cut connection and waits until it
// is gone. A reply lost on its way back leaves the backend idle, and a
// request lost on its way in may leave it in its open transaction, holding
// locks: the model has the connection and that transaction gone by the
// next read.
func (r *run) endBackend(w string, backend worker.Backend) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	r.h.timed(func() {
		released := r.h.pooledRelease(ctx, backend)
		backend.Terminate(ctx, r.h.Inst.Conn)
		if err = backend.AwaitGone(ctx, r.h.Inst.Conn); err == nil {
			released()
		}
	})
	if err != nil {
		r.t.Fatalf("harness: end %s's cut connection: %v", w, err)
	}
}

// dbRestart injects the server's fault: a crash and restart that loses no
// acknowledged commit (single), a crash that loses the unflushed WAL
// (async-commit) or a failover to the standby (the standby topologies),
// as the deployment suffers (serverfaults.go). Every connection breaks
// and every open transaction rolls back. Running workers reconnect at
// once; a paused one finds its connection broken at its next statement,
// as it would in production.
func (r *run) dbRestart(t *rapid.T) {
	if r.inFlight.any() {
		t.Skip("a step waits or a split is open: no restart until it ends")
	}
	odds := restartOdds
	if r.since != nil {
		// A rewind is drawn only when it has something to lose, and then
		// more often: what it loses is the point of the topology.
		if r.since.acked == 0 {
			t.Skip("nothing acknowledged since the durable point")
		}
		odds = rewindOdds
	}
	if rapid.IntRange(0, odds-1).Draw(t, "restart_now") != odds-1 {
		t.Skip("restarts are rare")
	}
	if r.h.Faults.ServerFault() == pgserver.FaultFailover && !r.h.Faults.Rewinds() && rapid.Bool().Draw(t, "stuck_commit") {
		r.stuckFailover(t)
	} else {
		r.serverFault()
	}
	r.h.Coverage.add(CovDBRestart)
}

func (r *run) runRestart() model.Outcome {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var err error
	r.h.timed(func() { err = r.h.restart(ctx) })
	if err != nil {
		r.t.Fatalf("harness: %v", err)
	}
	r.reconnectAll("restart")
	return model.Outcome{Kind: model.OK}
}

// reconnectAll is every worker's part of a server fault: a running one
// reconnects at once; a paused one, and every process of the pool this
// check does not use, finds its connection broken later.
func (r *run) reconnectAll(fault string) {
	for _, w := range r.workers {
		switch {
		case r.dead[w]:
		case r.running(w):
			if _, err := r.h.pool.Get(w).Do(worker.Request{Op: "reconnect"}); err != nil {
				r.t.Fatalf("harness: reconnect %s after the %s: %v", w, fault, err)
			}
		default:
			r.h.pool.MarkStale(w)
		}
	}
	// The pool's processes this check does not use lost their connections
	// too; they reconnect when a later check takes them.
	for _, name := range r.h.pool.Names() {
		if !slices.Contains(r.workers, name) {
			r.h.pool.MarkStale(name)
		}
	}
}

// restart crashes and restarts the server and gives the harness a new
// checking connection.
func (h *Harness) restart(ctx context.Context) error {
	if err := h.Faults.Restart(ctx); err != nil {
		return err
	}
	h.pool.DiscardSpares() // their connections are broken too
	if err := h.Inst.EnsureConn(ctx); err != nil {
		return fmt.Errorf("after the restart: %w", err)
	}
	return nil
}

// connected makes sure w has a working connection before a fault cuts it,
// so that the fault hits the statement and not the connecting.
func (h *Harness) connected(w string) error {
	p := h.pool.Get(w)
	var req worker.Request
	switch {
	case h.pool.Stale(w):
		req.Op = "reconnect"
	case p.Backend == 0:
		req.Op = "reset" // connects; no transaction is open (faultTarget)
	default:
		return nil
	}
	resp, err := p.Do(req)
	if err == nil && resp.Err != "" {
		err = fmt.Errorf("%s", resp.Err)
	}
	h.pool.Used(w)
	return err
}
