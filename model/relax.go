package model

import "strings"

// Property is one promise of the policy, as `outboxlab check --profile`
// reports it. A profile searches for a counterexample to each property
// with the ones already found broken relaxed: the model then allows both
// the outcome the property demands and the one it forbids, so that one
// early failure does not hide the rest.
type Property uint16

const (
	NoStrandedRow Property = 1 << iota // every event is eventually claimable and ends SENT (or DEAD)
	Fencing                            // no outcome of an old claim lands on a newer claim or on a row someone else took
	StrictExpiry                       // no outcome by an expired owner, even before anyone took the row
	Terminal                           // SENT and DEAD stay as they are
	Backoff                            // a retried event waits for its backoff
	OneLiveOwner                       // no claim takes a live lease, and every lease lasts as declared
	FIFOOrder                          // a fifo claim takes the earliest eligible rows
	NoWait                             // a claim never waits on another transaction's lock
	AttemptBudget                      // max_attempts: never claimed more often, DEAD exactly when spent
)

// Properties lists every property in the order a profile reports them.
var Properties = []Property{NoStrandedRow, Fencing, StrictExpiry, Terminal, Backoff, OneLiveOwner, FIFOOrder, NoWait, AttemptBudget}

var propertyNames = map[Property]string{
	NoStrandedRow: "no_stranded_row",
	Fencing:       "fencing",
	StrictExpiry:  "strict_expiry",
	Terminal:      "terminal",
	Backoff:       "backoff",
	OneLiveOwner:  "one_live_owner",
	FIFOOrder:     "order",
	NoWait:        "claims_never_wait",
	AttemptBudget: "attempt_budget",
}

// String is the property's name in a profile: fencing, strict_expiry.
func (p Property) String() string {
	var names []string
	for _, q := range Properties {
		if p&q != 0 {
			names = append(names, propertyNames[q])
		}
	}
	return strings.Join(names, "+")
}

// ParseProperty reads a property's name, as String writes it.
func ParseProperty(name string) (Property, bool) {
	for p, n := range propertyNames {
		if n == name {
			return p, true
		}
	}
	return 0, false
}

// relaxed reports whether the policy's Relax set holds q.
func (p Policy) relaxed(q Property) bool { return p.Relax&q != 0 }

// PropertyOf names the property a broken rule belongs to, from the rule
// and its detail (a stale outcome is fencing when its row was taken by a
// newer claim, strict_expiry when only its lease had run out, terminal on
// a SENT or DEAD row). 0 means a rule of no property that can be relaxed:
// the protocol fails in a way of its own (a server error, a wrong result).
// One rule is ambiguous: "claim took e2 out of order: e1, an expired lease,
// is claimable first" is a fifo slip or a claim that never takes expired
// leases; it is filed under no_stranded_row, whose relaxation (a claim may
// leave any eligible row behind) covers both.
func PropertyOf(rule, detail string) Property {
	has := func(s string) bool { return strings.Contains(rule, s) }
	switch {
	case has("blocked"):
		return NoWait
	case has("an event never reached SENT"), has("claim returned nothing while"), has("batch claim left"),
		has("an expired lease, is claimable first"), has("outlived its session"):
		return NoStrandedRow
	case has("SENT is terminal"), has("DEAD is terminal"), has("a SENT row"), has("a DEAD row"):
		return Terminal
	case has("stale owner's"):
		if strings.Contains(detail, "its lease expired") {
			return StrictExpiry
		}
		return Fencing
	case has("waiting for its backoff"), has("left no backoff"):
		return Backoff
	case has("whose lease is live"), has("granted less than the declared lease"), has("ended while its session lived"):
		return OneLiveOwner
	case has("out of order"):
		return FIFOOrder
	case has("attempt budget"), has("exhausted event"), has("of the last attempt"):
		return AttemptBudget
	}
	return 0
}
