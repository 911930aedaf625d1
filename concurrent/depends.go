package concurrent

import (
	"slices"

	"github.com/anishathalye/porcupine"
	"github.com/outboxlab/outboxlab/model"
)

// The dependency closure of a shrunk part. An operation's outcome is an
// observation of its row: a complete refused says the row was not its
// claim's live lease any more, a claim that returned e1 at gen 2 says e1
// was claimable and claimed once before. Every kept operation but the
// culprit is held to what it observed by the search's own condition (the
// part without the culprit linearizes). The culprit is not: it is the one
// that fails. If the search drops the operations whose writes explain the
// culprit's observation (the renew that made a lease live again, the
// rescue that then took it), the part still fails, but on the culprit,
// and reads as a different bug: the owner's complete wrongly refused,
// where the history showed a rescue that took a live lease. So a part
// keeps, for every row the culprit observes, the writes to that row that
// may have taken effect between the last claim of the row that surely
// came before the culprit (its anchor, kept too) and the culprit: the
// writes that could explain what it saw. A write that surely came before
// the anchor cannot: a claim sets the whole row (status, generation, a
// fresh lease), and what the claim itself saw is held by the condition
// above. Without an anchor, every write to the row before the culprit is
// kept.
//
// "Surely before" is by the clock: w returned before the anchor was
// called (the anchor of a claim transaction counts from its Begin's call
// to its commit's return); "may have taken effect between" is w called
// before the culprit returned and returned after the anchor was called.
// What each operation observes and writes is read off its kind and its
// outcome, as the model steps it:
//
//   - a complete, retry or renew observes its row, whatever its outcome,
//     and writes it when it applied or its outcome is unknown;
//   - a claim observes and writes the rows it returned, and a claim whose
//     outcome is unknown may have written any row;
//   - a Commit or Rollback writes the rows its transaction's claim
//     returned; a kill or a restart the rows its open transactions held;
//   - a fixture (expire, due, age) and an Enqueue write their row;
//   - a rescue may write any expired row: "*";
//   - a read observes the rows it returned.
//
// Left out: a claim's rows it passed over (an empty claim, or one that
// took e2 and not e1) and the rows an attempt budget let a claim bury
// unseen.

// keepsObserved reports whether cand, part less some operations, keeps
// the culprit's anchors and every write of part that could explain what
// the culprit observed (see above).
func keepsObserved(part, cand []porcupine.Operation, culprit porcupine.Operation) bool {
	for _, r := range observes(culprit) {
		anchor, from, ok := anchorOf(part, culprit, r)
		if ok && !hasOp(cand, anchor) {
			return false
		}
		for _, w := range part {
			if hasOp(cand, w) || same(w, culprit) || w.Call >= culprit.Return || ok && w.Return < from {
				continue
			}
			if overlaps(writes(part, w), []string{r}) {
				return false
			}
		}
	}
	return true
}

// anchorOf is the last claim of event's row in h that surely took effect
// before the culprit, and the time it was called (for a claim transaction,
// its Begin's call; it took effect at its commit, which must have
// returned before the culprit was called).
func anchorOf(h []porcupine.Operation, culprit porcupine.Operation, event string) (anchor porcupine.Operation, from int64, ok bool) {
	for i, c := range h {
		in := c.Input.(Input)
		if same(c, culprit) || in.Observe || !slices.Contains(grantedEvents(c.Output.(Output).Out), event) {
			continue
		}
		done := c.Return
		if in.Op.Kind == model.Begin {
			j := nextOnLane(h, i)
			if j < 0 || h[j].Input.(Input).Op.Kind != model.Commit || h[j].Output.(Output).Out.Kind != model.OK {
				continue
			}
			done = h[j].Return
		}
		if done < culprit.Call && (!ok || c.Call > from) {
			anchor, from, ok = c, c.Call, true
		}
	}
	return anchor, from, ok
}

// observes is the rows whose state o's outcome depends on ("*": all).
func observes(o porcupine.Operation) []string {
	in, out := o.Input.(Input), o.Output.(Output)
	if in.Observe {
		var events []string
		for _, r := range out.Rows {
			events = append(events, r.Event)
		}
		return events
	}
	switch in.Op.Kind {
	case model.Complete, model.Retry, model.Renew:
		return []string{in.Op.Event}
	case model.ClaimOp, model.Begin:
		return grantedEvents(out.Out)
	}
	return nil
}

// writes is the rows o may have changed ("*": any), h the part it is in.
func writes(h []porcupine.Operation, o porcupine.Operation) []string {
	in, out := o.Input.(Input), o.Output.(Output)
	if in.Observe {
		return nil
	}
	switch in.Op.Kind {
	case model.Complete, model.Retry, model.Renew:
		if out.Out.Kind == model.Applied || out.Out.Kind == model.Unknown {
			return []string{in.Op.Event}
		}
	case model.ClaimOp, model.Begin:
		if out.Out.Kind == model.Unknown {
			return []string{"*"}
		}
		return grantedEvents(out.Out)
	case model.Expire, model.MakeDue, model.Age, model.Enqueue:
		return []string{in.Op.Event}
	case model.Rescue:
		return []string{"*"}
	case model.Commit, model.Rollback, model.Kill, model.EndSession, model.Restart:
		return heldByOpenTransactions(h, slices.IndexFunc(h, func(p porcupine.Operation) bool { return same(p, o) }), false)
	}
	return nil
}

func grantedEvents(out model.Outcome) []string {
	var events []string
	for _, g := range out.Grants() {
		events = append(events, g.Event)
	}
	return events
}

// overlaps reports whether two sets of rows share one ("*" is every row).
func overlaps(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	if slices.Contains(a, "*") || slices.Contains(b, "*") {
		return true
	}
	return slices.ContainsFunc(a, func(e string) bool { return slices.Contains(b, e) })
}
