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
	if slices.ContainsFunc(allowed, func(t Transition) bool { return t.Out == got }) {
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
		why = explainClaim(s, got)
	case Complete, Retry, Renew:
		why = explainUpdate(s, op, got)
	}
	if why == "" {
		why = "want " + wants(allowed)
	}
	return why
}

// explainClaim names what a claim must not do; "" when no rule fits.
func explainClaim(s State, got Outcome) string {
	eligible := s.Eligible()
	switch got.Kind {
	case Empty:
		if len(eligible) > 0 {
			return fmt.Sprintf("claim returned nothing while %s is claimable (stranded row)", eligible[0])
		}
		return ""
	case Claimed:
	default:
		return ""
	}
	i := s.row(got.Event)
	if i < 0 {
		return fmt.Sprintf("claim returned %s, which was never enqueued", got.Event)
	}
	r := s.Rows[i]
	switch {
	case r.LockedBy != "":
		return fmt.Sprintf("claim took %s, a row locked by another transaction", r.Event)
	case r.Status == Sent:
		return fmt.Sprintf("claim took %s, a SENT row (SENT is terminal)", r.Event)
	case r.Status == InProgress && r.LeaseLive:
		return fmt.Sprintf("claim took %s whose lease is live (two live owners)", r.Event)
	case r.Status == Ready && !r.Due:
		return fmt.Sprintf("claim took %s which is waiting for its backoff", r.Event)
	case s.Order != Any && eligible[0] != r.Event:
		if first := s.Rows[s.row(eligible[0])]; first.Status == InProgress {
			// Its own rule: a claim that never takes expired leases (a
			// stranded row) shows here as often as an ordering slip.
			return fmt.Sprintf("claim took %s out of order: %s, an expired lease, is claimable first (a claim that skips expired leases strands rows)", r.Event, eligible[0])
		}
		return fmt.Sprintf("claim took %s out of order: %s is claimable first", r.Event, eligible[0])
	case got.Gen != r.Gen+1:
		return fmt.Sprintf("claim returned generation %d, want %d (generation must rise by one)", got.Gen, r.Gen+1)
	}
	return ""
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
		if r.Status == Sent {
			return fmt.Sprintf("%s applied to a SENT row", name)
		}
		return fmt.Sprintf("stale owner's %s applied (%s gen %d is not the current live claim: %s)", name, op.Event, op.Gen, staleness(r, op.Gen))
	case Rejected:
		return fmt.Sprintf("current owner's %s rejected", name)
	}
	return ""
}

// staleness says why gen is not r's current live claim.
func staleness(r Row, gen int64) string {
	switch {
	case r.Status != InProgress:
		return fmt.Sprintf("%s is %s", r.Event, r.Status)
	case r.Gen != gen:
		return fmt.Sprintf("%s is at gen %d", r.Event, r.Gen)
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
