package machine

import (
	"slices"

	"github.com/outboxlab/outboxlab/model"
)

// rebound is op with its generation rebound, for ReplayRebinding: an
// outcome (a whole complete, retry or renew) whose worker never received
// the claim it names gets the generation of that worker's latest claim of
// the same event in the model, the one it would answer now; any other op,
// or an outcome of a worker with no claim of the event, is op as it is.
//
// A program is written with the generations its run handed out. Take out
// its early steps and the claims that remain come back with lower
// generations, and after a rewind with reissued ones, which no rewriting
// of the program could predict; the replay knows them as it goes.
func (r *run) rebound(op model.Op) model.Op {
	switch op.Kind {
	case model.Complete, model.Retry, model.Renew:
	default:
		return op
	}
	if op.Part.Of > 0 {
		return r.reboundPart(op)
	}
	claims := r.model().Claims
	if r.claimOf(op).ID > 0 {
		return op
	}
	latest, nth := int64(-1), 0
	for _, c := range claims {
		if c.Worker == op.Worker && c.Event == op.Event {
			nth++
			latest = max(latest, c.Gen)
		}
	}
	if latest >= 0 {
		op.Gen = latest
		if op.Fence.Kind == model.ShowNone {
			op.Fence.Nth = nth // the line names the worker's Nth claim: its latest now
		}
	}
	return op
}

// reboundPart is rebound for a part of a split outcome: the first part
// rebinds as the whole step would, and the last part follows the first
// part's claim, which the open split holds. Take out the reclaim that a
// program's split complete was sent under, and the split follows the
// claim the worker holds now, as a whole complete would.
func (r *run) reboundPart(op model.Op) model.Op {
	switch {
	case op.Kind == model.ClaimOp || op.Kind == model.Rescue:
	case op.Part.First():
		whole := r.rebound(op.Whole())
		whole.Part = op.Part
		return whole
	case op.Part.Last() && r.split != nil && r.split.Kind == op.Kind && r.split.Worker == op.Worker && r.split.Event == op.Event:
		op.Gen, op.Fence = r.split.Gen, r.split.Fence
	}
	return op
}

// renameClaimed is ReplayRebinding's second rebinding: a claim step s that
// the program records as taking one event and that took another (got)
// swaps the two events' names in the steps after it, so that the outcomes
// and fixtures that named the recorded event now name the one the claim
// took, and the other way round. Take out a program's early claim and a
// later claim comes back with another row: the steps after it follow that
// row, as the swap moves of the shrinker would, without a replay per swap.
// A claim of several rows, or one the record has no row for, renames
// nothing; neither does an enqueue, whose name is the event it creates.
func renameClaimed(rest []Step, s Step, got model.Outcome) {
	if (s.Op.Kind != model.ClaimOp && s.Op.Kind != model.Begin) || s.Op.Part.Of > 0 {
		return
	}
	want, took := s.Out.Grants(), got.Grants()
	if len(want) != 1 || len(took) != 1 || want[0].Event == took[0].Event {
		return
	}
	a, b := want[0].Event, took[0].Event
	swap := func(e string) string {
		switch e {
		case a:
			return b
		case b:
			return a
		}
		return e
	}
	for i := range rest {
		if rest[i].Op.Kind == model.Enqueue {
			continue
		}
		rest[i].Op.Event = swap(rest[i].Op.Event)
		if rest[i].Out.Kind == model.Claimed {
			rest[i].Out.Event = swap(rest[i].Out.Event)
			more := slices.Clone(rest[i].Out.More) // the program's own is shared
			for j := range more {
				more[j].Event = swap(more[j].Event)
			}
			rest[i].Out.More = more
		}
	}
}
