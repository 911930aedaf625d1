package model

import "fmt"

// ExplainRows names the rule broken when the persisted rows after op match
// no state the model allows: s is the model's expectation (its first
// possible state), observed what the state query returned. It returns ""
// when no rule more precise than "persisted rows differ from the model"
// fits. Rules name the cause, so that a lease too short and a lost backoff
// read as what they are:
//
//   - a live lease found expired right after its claim or renew, or after
//     one Age (60% of the declared lease), was granted for less than the
//     declared lease: the claim's or the renew's fault, whichever granted it;
//   - a retried row found due at once lost its backoff.
func ExplainRows(op Op, s State, observed []RowView) (rule, detail string) {
	seen := map[string]RowView{}
	for _, v := range observed {
		seen[v.Event] = v
	}
	for _, r := range s.Rows {
		got, ok := seen[r.Event]
		if !ok || got.Status != r.Status {
			continue
		}
		switch {
		case r.Status == InProgress && r.LeaseLive && got.LeaseExpired && grantedOrAged(op, r.Event):
			grantor := "claim"
			if r.Renewed {
				grantor = "renew"
			}
			return grantor + " granted less than the declared lease",
				fmt.Sprintf("after %v, %s's lease has expired: the %s that granted it gave less than the declared lease (%s)", op, r.Event, grantor, leaseLeft(r))
		case r.Status == Ready && !r.Due && got.Due && op.Kind == Retry && op.Event == r.Event:
			return "retry left no backoff",
				fmt.Sprintf("after %v, %s is due at once: a retried event must wait for its backoff", op, r.Event)
		}
	}
	return "", ""
}

// grantedOrAged reports whether op is a step after which event's live
// lease may be judged for its length: a claim or commit that granted it, a
// renew, or an Age of that row.
func grantedOrAged(op Op, event string) bool {
	switch op.Kind {
	case ClaimOp, Commit:
		return true
	case Renew, Age:
		return op.Event == event
	}
	return false
}

func leaseLeft(r Row) string {
	if r.Aged {
		return "a lease of the declared length has 40% of it left after one Age"
	}
	return "a fresh lease of the declared length is live"
}
