package model

import (
	"fmt"
	"strings"
)

// The invariants are plain functions over what the state query observed,
// so every test holds every protocol to them. Each returns nil or an error
// whose text names the broken invariant and is the same on every run:
// rapid shrinks only a failure that repeats with the same message.

// CheckRows is the schema's own check on one observation: a lease is held
// exactly while a row is INPROGRESS, the status is one of the four, and
// each event has one row. (A DEAD row without an attempt budget is the
// model's to reject: it never expects one.)
func CheckRows(rows []RowView) error {
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r.Event] {
			return fmt.Errorf("event ids are unique (%s appears twice)", r.Event)
		}
		seen[r.Event] = true
		switch r.Status {
		case Ready, InProgress, Sent, Dead:
		default:
			return fmt.Errorf("lease/status check: %s has status %q, want READY, INPROGRESS, SENT or DEAD", r.Event, r.Status)
		}
		switch {
		case r.LeaseHeld && r.Status != InProgress:
			return fmt.Errorf("lease/status check: %s is %s with a lease", r.Event, r.Status)
		case !r.LeaseHeld && r.Status == InProgress:
			return fmt.Errorf("lease/status check: %s is INPROGRESS without a lease", r.Event)
		}
	}
	return nil
}

// CheckChange holds one step, op with outcome out, to what no step may do
// whatever the model expected: delete a row (under done=delete, except by
// a complete that applied), move a SENT or DEAD row, lower a generation,
// raise one except by exactly one for each row a claim took, or change
// anything when it was rejected or found nothing (but an empty claim may
// bury an exhausted attempt). Generations are compared only when both
// observations have them.
func CheckChange(p Policy, before, after []RowView, op Op, out Outcome) error {
	after = withoutSessionEnd(p, before, after, out)
	now := map[string]RowView{}
	for _, a := range after {
		now[a.Event] = a
	}
	if err := CheckOwnRow(before, after, op); err != nil {
		return err
	}
	quiet := map[OutcomeKind]string{Rejected: "a rejected step", Empty: "an empty claim"}[out.Kind]
	var rose []string
	for _, b := range before {
		a, ok := now[b.Event]
		if !ok {
			if err := checkDeleted(p, b, op, out); err != nil {
				return err
			}
			continue
		}
		gens := b.HasGen && a.HasGen
		terminal := !p.relaxed(Terminal)
		if terminal && b.Status == Dead && (a.Status != Dead || gens && a.Gen != b.Gen) {
			return fmt.Errorf("DEAD is terminal (%s went %s -> %s)", b.Event, viewText(b, gens), viewText(a, gens))
		}
		if terminal && b.Status == Sent && (a.Status != Sent || gens && a.Gen != b.Gen) {
			from, to := string(b.Status), string(a.Status)
			if from == to {
				from, to = fmt.Sprintf("%s gen=%d", from, b.Gen), fmt.Sprintf("%s gen=%d", to, a.Gen)
			}
			return fmt.Errorf("SENT is terminal: %s went %s -> %s", b.Event, from, to)
		}
		switch {
		case gens && a.Gen < b.Gen:
			return fmt.Errorf("generation never decreases: %s went %d -> %d", b.Event, b.Gen, a.Gen)
		case gens && a.Gen > b.Gen && !commitsClaim(op, out):
			return fmt.Errorf("generation rises only with a committed claim: %s went %d -> %d", b.Event, b.Gen, a.Gen)
		case gens && a.Gen > b.Gen+1:
			return fmt.Errorf("generation must rise by exactly one per claim: %s went %d -> %d", b.Event, b.Gen, a.Gen)
		case gens && a.Gen > b.Gen:
			rose = append(rose, b.Event)
		}
		if quiet != "" && !sameView(a, b, gens) && !(out.Kind == Empty && buried(p, b, a)) {
			return fmt.Errorf("%s changes nothing: %s went %s -> %s", quiet, b.Event, viewText(b, gens), viewText(a, gens))
		}
	}
	if len(rose) > p.batch() {
		if p.batch() == 1 {
			return fmt.Errorf("one claim takes one row: %s and %s both rose", rose[0], rose[1])
		}
		return fmt.Errorf("one claim takes at most batch=%d rows: %d rose", p.batch(), len(rose))
	}
	if quiet != "" && len(after) != len(before) {
		return fmt.Errorf("%s changes nothing: %d rows became %d", quiet, len(before), len(after))
	}
	return nil
}

// checkDeleted holds a row that left the state query to done=delete: only
// a complete of that event that applied (or whose outcome nobody knows)
// may take it away.
func checkDeleted(p Policy, b RowView, op Op, out Outcome) error {
	switch {
	case !p.Delete:
		return fmt.Errorf("rows are never deleted: %s disappeared", b.Event)
	case op.Kind == Complete && op.Event == b.Event && (out.Kind == Applied || out.Kind == Unknown):
		return nil
	}
	return fmt.Errorf("lost event: %s left the state without a complete that applied (done=delete; it went away at %v while %s)", b.Event, op, viewText(b, b.HasGen))
}

// buried reports whether a row went from an expired last attempt to DEAD,
// which an empty claim may do (it made an exhausted attempt DEAD).
func buried(p Policy, b, a RowView) bool {
	return (p.MaxAttempts > 0 || p.relaxed(AttemptBudget)) && b.Status == InProgress && b.LeaseExpired && a.Status == Dead
}

// CheckOwnRow holds an outcome or a fixture to its own event's row: any
// other row that changed was reached through a wrong id (a claim that
// returned another row's id). It comes first, because such a step also
// breaks the rules of the row it was meant for.
func CheckOwnRow(before, after []RowView, op Op) error {
	if !rowOwnStep(op) {
		return nil
	}
	now := map[string]RowView{}
	for _, a := range after {
		now[a.Event] = a
	}
	for _, b := range before {
		a, ok := now[b.Event]
		gens := b.HasGen && a.HasGen
		if ok && b.Event != op.Event && !sameView(a, b, gens) {
			// The rows go in parentheses: the rule is the same whichever
			// row a wrong id reached.
			return fmt.Errorf("%s changed another event's row (%s went %s -> %s)", stepName(op.Kind), b.Event, viewText(b, gens), viewText(a, gens))
		}
	}
	return nil
}

// rowOwnStep reports whether op acts on its own event's row alone: an
// outcome sent with the id its claim returned, or a fixture. Another row
// that changes was named by a wrong id.
func rowOwnStep(op Op) bool {
	switch op.Kind {
	case Complete, Retry, Renew, Expire, MakeDue, Age:
		return true
	}
	return false
}

// stepName is a kind as a message names it: complete, retry, expire.
func stepName(k Kind) string {
	if k == MakeDue {
		return "due"
	}
	return strings.ToLower(string(k))
}

// commitsClaim reports whether a step may commit a claim: an autocommit
// claim, a commit, or any step whose outcome nobody knows.
func commitsClaim(op Op, out Outcome) bool {
	return out.Kind == Unknown || op.Kind == ClaimOp || op.Kind == Commit
}

// viewText is a row as a failure message shows it: READY gen=0 due.
func viewText(v RowView, gen bool) string {
	text := string(v.Status)
	if gen {
		text += fmt.Sprintf(" gen=%d", v.Gen)
	}
	switch {
	case v.Status == InProgress && v.LeaseExpired:
		text += " expired"
	case v.Status == InProgress:
		text += " live"
	case v.Status == Ready && v.Due:
		text += " due"
	case v.Status == Ready:
		text += " waiting"
	}
	if v.Status != InProgress && v.LeaseHeld {
		text += " leased"
	}
	return text
}
