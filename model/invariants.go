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
// exactly while a row is INPROGRESS, the status is one of the three, and
// each event has one row.
func CheckRows(rows []RowView) error {
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r.Event] {
			return fmt.Errorf("event ids are unique: %s appears twice", r.Event)
		}
		seen[r.Event] = true
		switch r.Status {
		case Ready, InProgress, Sent:
		default:
			return fmt.Errorf("lease/status check: %s has status %q, want READY, INPROGRESS or SENT", r.Event, r.Status)
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
// whatever the model expected: delete a row, move a SENT row, lower a
// generation, raise one except by exactly one for one claim, or change
// anything when it was rejected or found nothing. Generations are compared
// only when both observations have them.
func CheckChange(before, after []RowView, op Op, out Outcome) error {
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
			return fmt.Errorf("rows are never deleted: %s disappeared", b.Event)
		}
		gens := b.HasGen && a.HasGen
		if b.Status == Sent && (a.Status != Sent || gens && a.Gen != b.Gen) {
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
		if quiet != "" && !sameView(a, b, gens) {
			return fmt.Errorf("%s changes nothing: %s went %s -> %s", quiet, b.Event, viewText(b, gens), viewText(a, gens))
		}
	}
	if len(rose) > 1 {
		return fmt.Errorf("one claim takes one row: %s and %s both rose", rose[0], rose[1])
	}
	if quiet != "" && len(after) != len(before) {
		return fmt.Errorf("%s changes nothing: %d rows became %d", quiet, len(before), len(after))
	}
	return nil
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
