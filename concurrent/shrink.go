package concurrent

import (
	"cmp"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/outboxlab/outboxlab/model"
)

// shrink returns the part of a non-linearizable history that shows its
// failure, in two stages.
//
// The witness, sound by construction: the shortest prefix of the history
// (its first operations in order of call, with every operation that
// overlaps one of them, repeatedly) that is not linearizable; everything
// left out starts after all of it has returned, so no order of the whole
// history can explain the prefix. Then the operations that change no state
// are dropped while it still fails (reads, rejected outcomes, claims that
// found nothing, with the end of such a Begin): adding them back only adds
// constraints, so the witness still fails for the history's own reason.
//
// The shrunk part, found by search: the witness's culprit is an operation
// without which it linearizes (its response is what no order explains);
// then whole lanes, whole events (left out of the reset, their operations
// dropped, a claim that took one made empty, their rows left out of every
// read), an operation with the next one of its lane (a Begin and its
// Commit), and single operations are dropped while the part stays well
// formed, keeps the end of each transaction it keeps, keeps every write
// that could explain what the culprit observed (keepsObserved,
// depends.go), fails, and linearizes without the culprit. The same operation
// stays the failing one, but a dropped operation may have been part of
// why, so the witness is kept too. Bounded in time: what each stage has
// when the time is up is what it returns.
func shrink(mk func(events []string) porcupine.Model, events []string, ops []porcupine.Operation, limit time.Duration) (witness []porcupine.Operation, shrunk []string, part []porcupine.Operation) {
	deadline := time.Now().Add(min(limit, 20*time.Second))
	illegal := func(ev []string, h []porcupine.Operation) bool {
		return porcupine.CheckOperationsTimeout(mk(ev), h, time.Until(deadline)+time.Second) == porcupine.Illegal
	}
	witness = shortestClosedPrefix(ops, func(h []porcupine.Operation) bool { return illegal(events, h) })
	witness = dropInert(witness, func(h []porcupine.Operation) bool { return illegal(events, h) })
	part = witness
	culprit, ok := findCulprit(part, func(h []porcupine.Operation) bool { return illegal(events, h) })
	if !ok || culprit.Input.(Input).Observe {
		// A read is explained by everything before it: nothing can be
		// dropped without changing what it should have shown.
		return witness, events, part
	}
	keeps := func(ev []string, h []porcupine.Operation) bool {
		return illegal(ev, h) && !illegal(ev, without(h, culprit))
	}
	try := func(ev []string, cand []porcupine.Operation) bool {
		if time.Now().After(deadline) || len(cand) == len(part) && len(ev) == len(events) || !wellFormed(cand) || !keepsEnds(part, cand) || !keepsObserved(part, cand, culprit) || !keeps(ev, cand) {
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
	return witness, events, part
}

// shortestClosedPrefix is the shortest failing prefix closed under
// overlap: the first k operations by call, with every operation that
// overlaps one already in, until none does. Such prefixes grow with k, and
// so does failure: a binary search finds the first k that fails.
func shortestClosedPrefix(ops []porcupine.Operation, illegal func([]porcupine.Operation) bool) []porcupine.Operation {
	byCall := slices.Clone(ops)
	slices.SortStableFunc(byCall, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	lo, hi := 1, len(byCall)
	for lo < hi {
		mid := (lo + hi) / 2
		if illegal(closure(byCall, mid)) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return closure(byCall, hi)
}

// closure is the first k operations of byCall and every operation that
// overlaps them, repeatedly: since byCall is in order of call, the
// operations called before the latest return so far.
func closure(byCall []porcupine.Operation, k int) []porcupine.Operation {
	end := int64(0)
	n := 0
	for n < len(byCall) && (n < k || byCall[n].Call <= end) {
		end = max(end, byCall[n].Return)
		n++
	}
	return byCall[:n]
}

// dropInert drops the operations that change no model state, all at once
// if the rest still fails, else one at a time.
func dropInert(h []porcupine.Operation, illegal func([]porcupine.Operation) bool) []porcupine.Operation {
	inert := func(h []porcupine.Operation, i int) []int {
		in, out := h[i].Input.(Input), h[i].Output.(Output)
		switch {
		case in.Observe, out.Out.Kind == model.Rejected, in.Op.Kind == model.ClaimOp && out.Out.Kind == model.Empty:
			return []int{i}
		case in.Op.Kind == model.Begin && out.Out.Kind == model.Empty:
			if j := nextOnLane(h, i); j >= 0 {
				return []int{i, j}
			}
			return []int{i}
		}
		return nil
	}
	var all []int
	for i := range h {
		all = append(all, inert(h, i)...)
	}
	if cand := deleteAt(h, all); len(cand) < len(h) && illegal(cand) {
		return cand
	}
	for i := 0; i < len(h); i++ {
		if drop := inert(h, i); drop != nil {
			if cand := deleteAt(h, drop); illegal(cand) {
				h, i = cand, i-1
			}
		}
	}
	return h
}

func deleteAt(h []porcupine.Operation, idx []int) []porcupine.Operation {
	var out []porcupine.Operation
	for i, o := range h {
		if !slices.Contains(idx, i) {
			out = append(out, o)
		}
	}
	return out
}

// findCulprit is an operation without which h linearizes, trying the
// latest to return first.
func findCulprit(h []porcupine.Operation, illegal func([]porcupine.Operation) bool) (porcupine.Operation, bool) {
	byReturn := slices.Clone(h)
	slices.SortStableFunc(byReturn, func(a, b porcupine.Operation) int { return cmp.Compare(b.Return, a.Return) })
	for _, c := range byReturn {
		if !illegal(without(h, c)) {
			return c, true
		}
	}
	return porcupine.Operation{}, false
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
