package machine

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/pgserver"
	"pgregory.net/rapid"
)

// The server faults of each topology (PROTOCOL-FORMAT.md, "Version 3"),
// as db_restart and db_durable draw them; rewind.go keeps the model's
// side.

// serverFault runs the fault the deployment suffers.
func (r *run) serverFault() {
	switch r.h.Faults.ServerFault() {
	case pgserver.FaultCrash:
		r.rewindStep(model.Op{Kind: model.Crash}, r.runCrash)
	case pgserver.FaultFailover:
		r.rewindStep(model.Op{Kind: model.Failover}, r.runFailover)
	default:
		r.exec(model.Op{Kind: model.Restart}, r.runRestart)
	}
}

// durableOp is the step that moves the durable point on this server, or
// false when it has none to move: Flush() under async-commit, Stall()
// under async-standby. A synchronous standby has none: stalled, it would
// hold every commit back.
func (r *run) durableOp() (model.Op, bool) {
	if r.h.Faults == nil || !r.h.Faults.Rewinds() {
		return model.Op{}, false
	}
	if r.h.Faults.ServerFault() == pgserver.FaultCrash {
		return model.Op{Kind: model.Flush}, true
	}
	return model.Op{Kind: model.Stall}, true
}

// dbDurable is the db_durable action: the durable point moves to now.
// (Drawn only where durableOp has a step: see actions.)
func (r *run) dbDurable(t *rapid.T) {
	if r.inFlight.any() {
		t.Skip("a step waits or a split is open")
	}
	op, _ := r.durableOp()
	r.runDurable(op)
}

// runDurable runs a Flush() or Stall() step, replayed or drawn.
func (r *run) runDurable(op model.Op) {
	r.exec(op, func() model.Outcome {
		r.serverCall(op, func(ctx context.Context) error {
			if op.Kind == model.Flush {
				return r.h.Faults.MarkDurable(ctx)
			}
			// Stalled since the reset: let the standby catch up, then
			// stall it again.
			if err := r.h.Faults.Resume(); err != nil {
				return err
			}
			if err := r.h.Faults.MarkDurable(ctx); err != nil {
				return err
			}
			return r.h.Faults.Stall(ctx)
		})
		return model.Outcome{Kind: model.OK}
	})
	if op.Kind == model.Stall {
		r.stalled = true
	}
	r.markDurable()
}

// runCrash is async-commit's rewind: every server process dies, the WAL
// not yet written is lost, the server recovers from what was. The new
// WAL writer is stopped again, so that the next rewind too loses exactly
// what came after the durable point.
func (r *run) runCrash() {
	r.serverCall(model.Op{Kind: model.Crash}, func(ctx context.Context) error {
		if err := r.h.restart(ctx); err != nil {
			return err
		}
		return r.h.Faults.MarkDurable(ctx)
	})
	r.reconnectAll("crash")
}

// runFailover is the standby topologies' fault: replication stalled (under
// sync-standby only now, once the standby has everything, so that the
// failover loses nothing), the primary's processes die, the standby is
// promoted behind the same address, and everyone reconnects to it. The
// old primary is rebuilt as the new standby before Failover returns.
func (r *run) runFailover() {
	r.failoverServer()
	r.reconnectAll("failover")
}

// failoverServer is runFailover's server part: everything but the
// workers' reconnecting.
func (r *run) failoverServer() {
	r.serverCall(model.Op{Kind: model.Failover}, func(ctx context.Context) error {
		if !r.stalled {
			if err := r.h.Faults.MarkDurable(ctx); err != nil {
				return err
			}
			if err := r.h.Faults.Stall(ctx); err != nil {
				return err
			}
		}
		if _, err := r.h.Faults.Failover(ctx); err != nil {
			return err
		}
		r.h.pool.DiscardSpares()
		if err := r.h.Inst.EnsureConn(ctx); err != nil {
			return err
		}
		r.stalled = false
		if !r.h.Faults.Rewinds() {
			return nil
		}
		// Under async-standby the rest of the check is at risk again,
		// as from its reset: the new standby has everything, and stalls.
		if err := r.h.Faults.MarkDurable(ctx); err != nil {
			return err
		}
		r.stalled = true
		return r.h.Faults.Stall(ctx)
	})
}

// serverCall runs a server fault's work, timed as time spent on the
// server; its failure is the harness's, never the protocol's.
func (r *run) serverCall(op model.Op, f func(ctx context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var err error
	r.h.timed(func() { err = f(ctx) })
	if err != nil {
		r.t.Fatalf("harness: %v: %v", op, err)
	}
}

// rewindStep runs a Crash() or Failover() and holds the rows read after
// it to every state a rewind to a prefix since the durable point may
// leave; the step's line says how many acknowledged commits were lost.
// On a server that loses none (sync-standby) it is a restart.
func (r *run) rewindStep(op model.Op, do func()) {
	defer r.traceBegin(op)()
	r.h.mu.Lock()
	r.h.steps++
	r.h.mu.Unlock()
	do()
	r.clock.rewound = true // a lease may be an earlier grant's now (clock.go)
	r.serverFaultEnded(op)
}

// serverFaultEnded logs a Crash() or Failover() that has happened and
// holds the rows to what it may have left (see rewindStep).
func (r *run) serverFaultEnded(op model.Op) {
	if r.since == nil {
		r.lastOut = model.Outcome{Kind: model.OK}
		r.log(fmt.Sprintf("%3d. %s", r.stepNumber(), model.FormatStep(op, r.lastOut)))
		r.recordStep(op, r.lastOut, "")
		r.observe(op, r.lastOut, r.rolledBack()...)
		return
	}
	candidates, lost := r.since.rewound(r.states)
	matched := model.Match(candidates, viewsOf(r.readState(op)), r.hasGen())
	least, most := -1, -1
	for _, s := range matched {
		n := lost[s.Key()]
		if least < 0 || n < least {
			least = n
		}
		most = max(most, n)
	}
	got := model.Outcome{Kind: model.Rewound, Lost: max(least, 0)}
	r.lastOut = got
	line := fmt.Sprintf("%3d. %s", r.stepNumber(), model.FormatStep(op, got))
	if most > least {
		line += fmt.Sprintf("   // or up to %d: the reads to come decide", most)
	}
	r.log(line)
	r.recordStep(op, got, "")
	r.observe(op, got, candidates...)
	r.since = newRewindLog(r.states)
	if got.Lost > 0 {
		r.h.Coverage.add(CovRewind)
	}
}

// rolledBack is every possible state with every open transaction gone.
func (r *run) rolledBack() []model.State {
	var out []model.State
	for _, s := range r.states {
		out = append(out, s.Step(model.Op{Kind: model.Restart})[0].Next)
	}
	return out
}

// mayServerFault: a restart, crash or failover needs a server the harness
// owns whose fault it is, no step waiting and no split open. What each does
// is the same every time (open transactions lost, running workers
// reconnected, paused ones left with a broken connection; a rewind to the
// durable point), so it replays.
func (r *run) mayServerFault(op model.Op) error {
	want := map[model.Kind]pgserver.Fault{model.Restart: pgserver.FaultRestart, model.Crash: pgserver.FaultCrash, model.Failover: pgserver.FaultFailover}[op.Kind]
	switch {
	case r.h.Faults == nil || r.h.Faults.ServerFault() == pgserver.FaultNone:
		return fmt.Errorf("the harness injects no server fault")
	case r.h.Faults.ServerFault() != want:
		return fmt.Errorf("this server's fault is %s, not a %s", r.h.Faults.ServerFault(), op.Kind)
	case r.inFlight.any():
		return fmt.Errorf("a step waits or a split is open: no %s until it ends", op.Kind)
	}
	return nil
}

// mayDurable: a Flush() or Stall() needs a server that may rewind, whose
// durable point that step moves (durableOp), no step waiting and no split
// open.
func (r *run) mayDurable(op model.Op) error {
	if d, ok := r.durableOp(); !ok || d.Kind != op.Kind || r.inFlight.any() {
		return fmt.Errorf("no %s step on this server now", op.Kind)
	}
	return nil
}

func init() {
	registerStep(stepKind{(*run).mayServerFault, func(r *run, _ model.Op) model.Outcome {
		r.serverFault()
		return r.lastOut
	}}, model.Restart, model.Crash, model.Failover)
	registerStep(stepKind{(*run).mayDurable, func(r *run, op model.Op) model.Outcome {
		r.runDurable(op)
		return r.lastOut
	}}, model.Flush, model.Stall)
}
