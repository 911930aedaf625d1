package concurrent

import (
	"cmp"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/outboxlab/outboxlab/model"
)

// shrink returns the smallest part of a non-linearizable history it can
// find that still shows the same anomaly: not linearizable, while the
// same part without its last-returning operation (the culprit, whose
// response no order can explain) is. Holding every candidate to both
// keeps the culprit fixed, so that dropping an operation never turns the
// failure into another one (a claim taken out, after which a later
// outcome on its row would fail for that reason alone).
//
// First the shortest prefix in order of return that fails; then, while
// the two conditions hold, whole lanes (a worker's, the fixture actor's),
// whole events (the event left out of the reset, its operations dropped,
// a claim that took it made empty, its row left out of every read), an
// operation with the next one of its lane (a Begin and its Commit), and
// single operations are dropped. Bounded in time: what it has when the
// time is up is what it returns, with the events it still needs.
func shrink(mk func(events []string) porcupine.Model, events []string, ops []porcupine.Operation, limit time.Duration) ([]string, []porcupine.Operation) {
	deadline := time.Now().Add(min(limit, 20*time.Second))
	illegal := func(ev []string, h []porcupine.Operation) bool {
		return porcupine.CheckOperationsTimeout(mk(ev), h, time.Until(deadline)+time.Second) == porcupine.Illegal
	}
	byReturn := slices.Clone(ops)
	slices.SortStableFunc(byReturn, func(a, b porcupine.Operation) int { return cmp.Compare(a.Return, b.Return) })
	k := shortestFailingPrefix(byReturn, func(h []porcupine.Operation) bool { return illegal(events, h) })
	part := byReturn[:k]
	culprit := part[k-1]
	keeps := func(ev []string, h []porcupine.Operation) bool {
		return illegal(ev, h) && !illegal(ev, without(h, culprit))
	}
	if !keeps(events, part) {
		return events, part
	}
	try := func(ev []string, cand []porcupine.Operation) bool {
		if time.Now().After(deadline) || len(cand) == len(part) && len(ev) == len(events) || !wellFormed(cand) || !keeps(ev, cand) {
			return false
		}
		events, part = ev, cand
		return true
	}
	for changed := true; changed && time.Now().Before(deadline); {
		changed = false
		for _, lane := range lanes(part) {
			changed = try(events, slices.DeleteFunc(slices.Clone(part), func(o porcupine.Operation) bool {
				return o.ClientId == lane && !same(o, culprit)
			})) || changed
		}
		for _, e := range named(events, part) {
			if !mentions(culprit, e) {
				changed = try(slices.DeleteFunc(slices.Clone(events), func(x string) bool { return x == e }), withoutEvent(part, e)) || changed
			}
		}
		for i := 0; i < len(part); i++ {
			if same(part[i], culprit) {
				continue
			}
			if j := nextOnLane(part, i); j >= 0 && !same(part[j], culprit) {
				cand := slices.Delete(slices.Delete(slices.Clone(part), j, j+1), i, i+1)
				if try(events, cand) {
					changed, i = true, i-1
					continue
				}
			}
			if try(events, slices.Delete(slices.Clone(part), i, i+1)) {
				changed, i = true, i-1
			}
		}
	}
	return events, part
}

// wellFormed reports whether every operation of h still has what it was
// sent on: an outcome the claim (by the same worker, earlier) that gave it
// its event and generation, a Commit or Rollback the Begin it ends. A
// part without them would fail for their absence, not for the anomaly.
func wellFormed(h []porcupine.Operation) bool {
	byCall := slices.Clone(h)
	slices.SortStableFunc(byCall, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	type grant struct {
		worker, event string
		gen           int64
	}
	got := map[grant]bool{}
	open := map[string]bool{}
	for _, o := range byCall {
		op := o.Input.(Input).Op
		out, _ := o.Output.(Output)
		switch op.Kind {
		case model.ClaimOp, model.Begin:
			for _, g := range out.Out.Grants() {
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

// shortestFailingPrefix is the fewest operations, taken in order of
// return, that fail. Failure need not grow with the prefix (an operation
// still running may explain what came before it), so a binary search's
// answer is walked down while a shorter prefix fails too.
func shortestFailingPrefix(byReturn []porcupine.Operation, illegal func([]porcupine.Operation) bool) int {
	lo, hi := 1, len(byReturn)
	for lo < hi {
		mid := (lo + hi) / 2
		if illegal(byReturn[:mid]) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	for hi > 1 && illegal(byReturn[:hi-1]) {
		hi--
	}
	return hi
}

func without(h []porcupine.Operation, op porcupine.Operation) []porcupine.Operation {
	return slices.DeleteFunc(slices.Clone(h), func(o porcupine.Operation) bool { return same(o, op) })
}

// lanes are the clients of a history, in order of first appearance.
func lanes(h []porcupine.Operation) []int {
	var out []int
	for _, o := range h {
		if !slices.Contains(out, o.ClientId) {
			out = append(out, o.ClientId)
		}
	}
	return out
}

// same reports whether a and b are one operation of a history: a lane
// runs one operation at a time, and its calls are timed apart.
func same(a, b porcupine.Operation) bool {
	return a.ClientId == b.ClientId && a.Call == b.Call && a.Return == b.Return
}
