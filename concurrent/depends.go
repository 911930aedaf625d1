package concurrent

import (
	"slices"

	"github.com/anishathalye/porcupine"
	"github.com/outboxlab/outboxlab/model"
)

// The dependency closure of a shrunk part. An operation's outcome is an
// observation of its row: a complete refused says the row was not its
// claim's live lease any more, a claim that returned e1 at gen 2 says e1
// was claimable and claimed once before. If the search drops the
// operations whose writes explain such an observation (the renew that
// made a lease live again, the rescue that then took it), the part still
// fails, but it fails on the observer, and reads as a different bug: the
// owner's complete wrongly refused, where the history showed a rescue
// that took a live lease. So a part may drop an operation only if no
// operation it keeps observes a row that operation may have written and
// may have come after it (called before the observer returned, so that
// some order puts the write first).
//
// What each operation observes and writes is read off its kind and its
// outcome, as the model steps it:
//
//   - a complete, retry or renew observes its row, whatever its outcome,
//     and writes it when it applied or its outcome is unknown;
//   - a claim observes and writes the rows it returned (their status and
//     generation made them claimable), and a claim whose outcome is
//     unknown may have written any row;
//   - a Commit or Rollback writes the rows its transaction's claim
//     returned; a kill or a restart the rows its open transactions held;
//   - a fixture (expire, due, age) and an Enqueue write their row;
//   - a rescue may write any expired row: "*";
//   - a read observes the rows it returned.
//
// Left out, as the search always did: a claim's rows it passed over (an
// empty claim, or one that took e2 and not e1) and the rows an attempt
// budget let a claim bury unseen. Those observations are still held by
// the search's other condition, that the part without the culprit
// linearizes: every kept operation but the culprit must be explained.

// keepsObserved reports whether cand, part less some operations, keeps
// every operation of part that may have written a row that an operation
// of cand observes, and may have taken effect before it.
func keepsObserved(part, cand []porcupine.Operation) bool {
	for _, w := range part {
		if hasOp(cand, w) {
			continue
		}
		wrote := writes(part, w)
		if len(wrote) == 0 {
			continue
		}
		for _, x := range cand {
			if w.Call < x.Return && overlaps(wrote, observes(x)) {
				return false
			}
		}
	}
	return true
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
