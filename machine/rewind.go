package machine

import (
	"context"
	"fmt"
	"slices"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/pgserver"
)

// The model's side of the topologies that forget (PROTOCOL-FORMAT.md,
// "Version 3"). Under async-commit a Crash, and under async-standby a
// Failover, bring the server back as it was after some prefix of the
// commits since the last durable point. The machine keeps the possible
// states after every step since that point; a rewind offers each of them,
// rewound (model.State.RewoundTo), to the next read, which decides, as it
// decides an ambiguous outcome.
//
// The durable point is where the machine chose it, and nowhere else, so
// that what a rewind loses does not depend on timing: under async-commit
// the WAL writer is stopped for the whole run (a check's reset truncates
// its tables, and such a commit writes every WAL record before it, so the
// reset is durable), and a Flush() step writes everything so far; under
// async-standby replication stalls once the check's reset is on the
// standby, and a Stall() step lets everything so far reach it before it
// stalls again. (Under sync-standby a stall would hold every commit back:
// its Failover stalls once the standby has everything, losing nothing.)

// rewindLog is what a rewind may go back to: the possible states after
// each step since the durable point, oldest first.
type rewindLog struct {
	points []rewindPoint
	acked  int // acknowledged commits since the durable point
}

// rewindPoint is one step's possible states and how many acknowledged
// commits came before them since the durable point.
type rewindPoint struct {
	states []model.State
	acked  int
}

// newRewindLog starts a log at a durable point, whose states are states.
func newRewindLog(states []model.State) *rewindLog {
	return &rewindLog{points: []rewindPoint{{states: slices.Clone(states)}}}
}

// record adds the states after a step. The step is an acknowledged commit
// when its answer came back (not unknown) and what other connections see
// changed: a row, or the claims the workers hold.
func (l *rewindLog) record(states []model.State, got model.Outcome) {
	last := l.points[len(l.points)-1]
	if got.Kind != model.Unknown && committedKey(last.states[0]) != committedKey(states[0]) {
		l.acked++
	}
	l.points = append(l.points, rewindPoint{states: slices.Clone(states), acked: l.acked})
}

// committedKey is what a commit may change, and an open transaction or a
// lease's age may not: the committed rows and the claims received.
func committedKey(s model.State) string {
	return fmt.Sprint(s.View(true), s.Claims)
}

// rewound is every state a rewind from now may leave, each with how many
// acknowledged commits it lost (the least, when two points give the same
// state).
func (l *rewindLog) rewound(now []model.State) ([]model.State, map[string]int) {
	var out []model.State
	lost := map[string]int{}
	for _, p := range l.points {
		for _, past := range p.states {
			for _, cur := range now {
				s := cur.RewoundTo(past)
				k := s.Key()
				if n, seen := lost[k]; seen {
					lost[k] = min(n, l.acked-p.acked)
					continue
				}
				lost[k] = l.acked - p.acked
				out = append(out, s)
			}
		}
	}
	return out, lost
}

// recordPoint adds the step that just ended to the rewind log, when the
// server may rewind.
func (r *run) recordPoint(got model.Outcome) {
	if r.since != nil {
		r.since.record(r.states, got)
	}
}

// markDurable makes the states now the durable point.
func (r *run) markDurable() {
	if r.since != nil {
		r.since = newRewindLog(r.states)
	}
}

// startRewindLog makes the check's reset its first durable point, on a
// server that may rewind.
func (r *run) startRewindLog() {
	if r.h.Faults != nil && r.h.Faults.Rewinds() {
		r.since = newRewindLog(r.states)
		r.stalled = r.h.Faults.ServerFault() == pgserver.FaultFailover
	}
}

// prepareServer puts the server's durability where the model expects it
// before a check's reset: under async-commit the WAL writer stopped (once
// a run, and again after every crash, see runCrash); on a standby
// topology replication streaming, a previous check's stall ended.
func (h *Harness) prepareServer(ctx context.Context) error {
	if h.Faults == nil {
		return nil
	}
	switch h.Faults.ServerFault() {
	case pgserver.FaultCrash:
		if h.walWriterStopped {
			return nil
		}
		if err := h.Faults.MarkDurable(ctx); err != nil {
			return err
		}
		h.walWriterStopped = true
	case pgserver.FaultFailover:
		return h.Faults.Resume()
	}
	return nil
}

// resetDurable makes a check's reset durable where the server may rewind:
// under async-commit its DELETEs commit asynchronously like any, and
// MarkDurable's synchronous commit writes and flushes all WAL before it (a
// crash that lost the reset would bring back the previous check's rows);
// under async-standby MarkDurable waits until the standby has replayed the
// reset, and replication then stalls: from the first step of the check on,
// nothing reaches the standby before a Stall() step or the failover.
func (h *Harness) resetDurable(ctx context.Context) error {
	if h.Faults == nil || !h.Faults.Rewinds() {
		return nil
	}
	if err := h.Faults.MarkDurable(ctx); err != nil {
		return fmt.Errorf("make the reset durable: %w", err)
	}
	if h.Faults.ServerFault() == pgserver.FaultFailover {
		return h.Faults.Stall(ctx)
	}
	return nil
}
