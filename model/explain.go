package model

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Explain names the rule an observed outcome broke: got is what op
// returned from s, allowed is s.Step(op). It returns nil when got is among
// allowed. The message starts with the step and is the same on every run:
//
//	w1.Complete(e1, gen=1) -> applied: stale owner's complete applied (e1 gen 1 is not the current live claim: e1 is at gen 2)
func Explain(s State, op Op, got Outcome, allowed []Transition) error {
	if slices.ContainsFunc(allowed, func(t Transition) bool { return t.Out.Equal(got) }) {
		return nil
	}
	return errors.New(FormatStep(op, got) + ": " + explain(s, op, got, allowed))
}

func explain(s State, op Op, got Outcome, allowed []Transition) string {
	if len(allowed) == 0 {
		if err := s.Precondition(op); err != nil {
			return "the model cannot run this step: " + err.Error()
		}
	}
	var why string
	switch op.Kind {
	case ClaimOp, Begin:
		why = explainClaim(claimedFrom(s, op), got)
	case Complete, Retry, Renew:
		why = explainUpdate(s, op, got)
	}
	if why == "" {
		why = "want " + wants(allowed)
	}
	return why
}

// claimedFrom is the state a claim chose its rows from: for
// Begin(expire e), the one after e's expiry, which its claim sees
// (expiring.go); else s.
func claimedFrom(s State, op Op) State {
	if op.Kind == Begin && op.Event != "" {
		if ts := s.Step(Op{Kind: Expire, Event: op.Event}); len(ts) == 1 {
			return ts[0].Next
		}
	}
	return s
}

// explainClaim names what a claim must not do; "" when no rule fits.
// A batch claim is checked row by row, then as a set: no row it must not
// take, then none left behind that it should have taken, then the order.
func explainClaim(s State, got Outcome) string {
	if got.Kind != Empty && got.Kind != Claimed {
		return ""
	}
	grants := got.Grants()
	for _, g := range grants {
		if why := explainGrant(s, g); why != "" {
			return why
		}
	}
	batch := s.Policy.batch()
	if len(grants) > batch {
		return fmt.Sprintf("claim took %d rows, more than batch=%d", len(grants), batch)
	}
	// The rows every claim must consider: with a rescue section, expired
	// leases may be left to the rescue.
	must := s.events(s.eligibleRows(!s.Policy.Rescue))
	took := map[string]bool{}
	for _, g := range grants {
		took[g.Event] = true
	}
	if n := min(batch, len(must)); len(grants) < n {
		left := ""
		for _, e := range must {
			if !took[e] {
				left = e
				break
			}
		}
		if len(grants) == 0 {
			return fmt.Sprintf("claim returned nothing while %s is claimable (stranded row)", left)
		}
		return fmt.Sprintf("batch claim left %s claimable (it took %d rows with batch=%d)", left, len(grants), batch)
	}
	if s.Policy.Order == Any || len(grants) == 0 {
		return ""
	}
	return explainOrder(s, grants)
}

// explainGrant names what one row of a claim's result must not be.
func explainGrant(s State, g Grant) string {
	i := s.row(g.Event)
	if i < 0 {
		return fmt.Sprintf("claim returned %s, which was never enqueued", g.Event)
	}
	r := s.Rows[i]
	switch {
	case r.LockedBy != "" && !s.buryingOpen(r.Event):
		// A row an open claim only buries is locked because it is
		// exhausted: taking it is a claim past its budget (below), the
		// rule whether or not a transaction is open.
		return fmt.Sprintf("claim took %s, a row locked by another transaction", r.Event)
	case r.Status == Sent:
		return fmt.Sprintf("claim took %s, a SENT row (SENT is terminal)", r.Event)
	case r.Status == Dead:
		return fmt.Sprintf("claim took %s, a DEAD row (DEAD is terminal)", r.Event)
	case r.Status == InProgress && r.LeaseLive:
		return fmt.Sprintf("claim took %s whose lease is live (two live owners)", r.Event)
	case r.Status == Ready && !r.Due:
		return fmt.Sprintf("claim took %s which is waiting for its backoff", r.Event)
	case s.exhausted(r):
		return fmt.Sprintf("claim took %s past its attempt budget (it was claimed %d times; max_attempts=%d)", r.Event, r.Gen, s.Policy.MaxAttempts)
	case g.Gen != r.Gen+1:
		return fmt.Sprintf("claim returned generation %d, want %d (generation must rise by one)", g.Gen, r.Gen+1)
	}
	return ""
}

// explainOrder names the first row a fifo claim took out of order: the
// earliest eligible row it skipped is claimable first.
func explainOrder(s State, grants []Grant) string {
	last, first := orderSlip(s, grants)
	if last == "" {
		return ""
	}
	if s.Rows[s.row(first)].Status == InProgress {
		// Its own rule: a claim that never takes expired leases (a
		// stranded row) shows here as often as an ordering slip; the
		// machine tells them apart where it can (OrderSlip).
		return fmt.Sprintf("claim took %s out of order: %s, an expired lease, is claimable first (a claim that skips expired leases strands rows)", last, first)
	}
	return fmt.Sprintf("claim took %s out of order: %s is claimable first", last, first)
}

// OrderSlip is the fifo slip of a claim that returned got in s: the row it
// took out of order, and the earlier eligible row it passed over; "" and
// "" when the claim kept the order. What the model cannot tell is why the
// row was passed over: a claim that skips it (an expired lease it never
// takes), or an order that puts the taken row first (a tie on what the
// claim orders by); the machine asks the server (machine/orderprobe.go).
func OrderSlip(s State, got Outcome) (took, passed string) {
	if s.Policy.Order != FIFO || got.Kind != Claimed {
		return "", ""
	}
	return orderSlip(s, got.Grants())
}

// orderSlip is OrderSlip for a claim's grants. With a rescue section the
// claim may skip every expired lease, so the order is judged among the
// rows it considered.
func orderSlip(s State, grants []Grant) (took, passed string) {
	eligible := s.events(s.eligibleRows(true))
	if s.Policy.Rescue && !slices.ContainsFunc(grants, func(g Grant) bool { return s.Rows[s.row(g.Event)].Status == InProgress }) {
		eligible = s.events(s.eligibleRows(false))
	}
	taken := map[string]bool{}
	for _, g := range grants {
		taken[g.Event] = true
	}
	for _, e := range eligible {
		if !taken[e] {
			passed = e
			break
		}
	}
	if passed == "" {
		return "", ""
	}
	for _, g := range grants {
		if s.row(g.Event) > s.row(passed) {
			return g.Event, passed
		}
	}
	return "", ""
}

// explainUpdate names what complete, retry or renew must not do; "" when
// no rule fits.
func explainUpdate(s State, op Op, got Outcome) string {
	name := stepName(op.Kind)
	i := s.row(op.Event)
	switch got.Kind {
	case Applied:
		if i < 0 {
			return fmt.Sprintf("%s applied to %s, which was never enqueued", name, op.Event)
		}
		r := s.Rows[i]
		if r.Status == Sent || r.Status == Dead {
			return fmt.Sprintf("%s applied to a %s row", name, r.Status)
		}
		c := s.ClaimOf(op)
		if s.lost(c) && r.Gen == c.Gen {
			return fmt.Sprintf("stale owner's %s applied on a reissued generation (%s's claim of %s at gen %d was lost in a rewind; gen %d of %s is another claim's now)",
				name, op.Worker, op.Event, c.Gen, c.Gen, op.Event)
		}
		why := s.staleness(r, c)
		if s.Policy.SessionLease && why == "its lease expired" {
			why += " with the session that held it"
		}
		return fmt.Sprintf("stale owner's %s applied (%s gen %d is not the current live claim: %s)", name, op.Event, op.Gen, why)
	case Rejected:
		return fmt.Sprintf("current owner's %s rejected", name)
	}
	return ""
}

// staleness says why c is not r's current live claim.
func (s State) staleness(r Row, c Claim) string {
	switch {
	case r.Status != InProgress:
		return fmt.Sprintf("%s is %s", r.Event, r.Status)
	case r.Gen != c.Gen:
		return fmt.Sprintf("%s is at gen %d", r.Event, r.Gen)
	case !s.owns(c, r):
		return fmt.Sprintf("gen %d of %s is another claim's", r.Gen, r.Event)
	default:
		return "its lease expired"
	}
}

// wants lists the allowed outcomes: "claimed e1 gen=1 or claimed e2 gen=1".
func wants(allowed []Transition) string {
	var outs []string
	for _, t := range allowed {
		if o := t.Out.String(); !slices.Contains(outs, o) {
			outs = append(outs, o)
		}
	}
	if len(outs) == 0 {
		return "no outcome"
	}
	return strings.Join(outs, " or ")
}

// buryingOpen reports whether an open claim transaction buries event's row
// (it locked the exhausted row to make it DEAD at its commit).
func (s State) buryingOpen(event string) bool {
	for _, p := range s.Pending {
		if slices.Contains(p.Bury, event) {
			return true
		}
	}
	return false
}
