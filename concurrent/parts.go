package concurrent

import (
	"cmp"
	"slices"

	"github.com/anishathalye/porcupine"
	"github.com/outboxlab/outboxlab/model"
)

// What the shrinking search may take out of a part of a history, and what
// a part must keep to fail for the reason the history did.

// wellFormed reports whether every operation of h still has what it was
// sent on: an outcome the claim (by the same worker, earlier) that gave it
// its event and generation, a claim of generation g the claim of g-1
// before it (or an unknown claim that may have been it), a Commit or
// Rollback the Begin it ends, and a worker's next operation after a Begin
// the end of that transaction (a commit, a rollback, a kill or a restart).
// A part without them would fail for their absence, not for the anomaly.
func wellFormed(h []porcupine.Operation) bool {
	byCall := slices.Clone(h)
	slices.SortStableFunc(byCall, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	type grant struct {
		worker, event string
		gen           int64
	}
	got := map[grant]bool{}
	claimedAt := map[string]map[int64]bool{} // event -> generations claimed so far
	open := map[string]bool{}
	for _, o := range byCall {
		op := o.Input.(Input).Op
		out, _ := o.Output.(Output)
		switch op.Kind {
		case model.ClaimOp, model.Begin, model.Complete, model.Retry, model.Renew:
			if open[op.Worker] {
				return false // the end of the worker's transaction was dropped
			}
		}
		switch op.Kind {
		case model.Kill:
			open[op.Worker] = false
		case model.Restart:
			clear(open)
		case model.ClaimOp, model.Begin:
			for _, g := range out.Out.Grants() {
				if g.Gen > 1 && !claimedAt[g.Event][g.Gen-1] && !unknownClaimBefore(byCall, o) {
					return false // a generation without the claim before it
				}
				if claimedAt[g.Event] == nil {
					claimedAt[g.Event] = map[int64]bool{}
				}
				claimedAt[g.Event][g.Gen] = true
				got[grant{op.Worker, g.Event, g.Gen}] = true
			}
			open[op.Worker] = op.Kind == model.Begin && out.Out.Kind != model.Unknown
		case model.Complete, model.Retry, model.Renew:
			if !got[grant{op.Worker, op.Event, op.Gen}] && !got[grant{op.Worker, op.Event, 0}] {
				return false
			}
		case model.Commit, model.Rollback:
			if !open[op.Worker] {
				return false
			}
			open[op.Worker] = false
		}
	}
	return true
}

// nextOnLane is the index of the next operation after i on i's lane, in
// order of call, or -1.
func nextOnLane(h []porcupine.Operation, i int) int {
	best := -1
	for j, o := range h {
		if j != i && o.ClientId == h[i].ClientId && o.Call > h[i].Call && (best < 0 || o.Call < h[best].Call) {
			best = j
		}
	}
	return best
}

// keepsEnds reports whether cand, part less some operations, keeps the
// end of every transaction whose Begin it keeps. A Begin left open to the
// end of a part holds its rows locked for the rest of it, so a later claim
// of them would fail for the dropped commit, not for the anomaly (a
// concurrent run on 18.4 once shrank to such a part, with no stale outcome
// left in it).
func keepsEnds(part, cand []porcupine.Operation) bool {
	for i, o := range part {
		if o.Input.(Input).Op.Kind != model.Begin {
			continue
		}
		j := nextOnLane(part, i)
		if j < 0 {
			continue
		}
		if k := part[j].Input.(Input).Op.Kind; k != model.Commit && k != model.Rollback {
			continue
		}
		if hasOp(cand, o) && !hasOp(cand, part[j]) {
			return false
		}
	}
	return true
}

func hasOp(h []porcupine.Operation, op porcupine.Operation) bool {
	return slices.ContainsFunc(h, func(o porcupine.Operation) bool { return same(o, op) })
}

// named is every event of a part: enqueued by the reset or by an
// operation, or returned by a claim.
func named(events []string, h []porcupine.Operation) []string {
	out := slices.Clone(events)
	for _, o := range h {
		in, res := o.Input.(Input), o.Output.(Output)
		if e := in.Op.Event; e != "" && !slices.Contains(out, e) {
			out = append(out, e)
		}
		for _, g := range res.Out.Grants() {
			if !slices.Contains(out, g.Event) {
				out = append(out, g.Event)
			}
		}
	}
	return out
}

// mentions reports whether an operation names event e: in its op, in the
// rows a claim returned.
func mentions(o porcupine.Operation, e string) bool {
	in := o.Input.(Input)
	if in.Op.Event == e {
		return true
	}
	out, _ := o.Output.(Output)
	for _, g := range out.Out.Grants() {
		if g.Event == e {
			return true
		}
	}
	return false
}

// withoutEvent is h as if event e had never been enqueued: its operations
// dropped, a claim that took only e now empty (one that took e with other
// rows, and a read, lose e's row), e out of every MaySkip.
func withoutEvent(h []porcupine.Operation, e string) []porcupine.Operation {
	var out []porcupine.Operation
	for _, o := range h {
		in, res := o.Input.(Input), o.Output.(Output)
		if in.Op.Event == e {
			continue
		}
		in.MaySkip = slices.DeleteFunc(slices.Clone(in.MaySkip), func(x string) bool { return x == e })
		res.Rows = slices.DeleteFunc(slices.Clone(res.Rows), func(r model.RowView) bool { return r.Event == e })
		if grants := res.Out.Grants(); slices.ContainsFunc(grants, func(g model.Grant) bool { return g.Event == e }) {
			grants = slices.DeleteFunc(grants, func(g model.Grant) bool { return g.Event == e })
			res.Out = model.Outcome{Kind: model.Empty}
			if len(grants) > 0 {
				res.Out = model.Outcome{Kind: model.Claimed, Event: grants[0].Event, Gen: grants[0].Gen, More: grants[1:]}
				if len(res.Out.More) == 0 {
					res.Out.More = nil
				}
			}
		}
		o.Input, o.Output = in, res
		out = append(out, o)
	}
	return out
}

// unknownClaimBefore reports whether a claim whose outcome is unknown was
// called before o: it may have taken any generation unseen.
func unknownClaimBefore(byCall []porcupine.Operation, o porcupine.Operation) bool {
	for _, p := range byCall {
		if p.Call >= o.Call {
			return false
		}
		k := p.Input.(Input).Op.Kind
		if out, _ := p.Output.(Output); (k == model.ClaimOp || k == model.Begin) && out.Out.Kind == model.Unknown {
			return true
		}
	}
	return false
}
