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
//   - a retried row found due at once lost its backoff;
//   - the attempt budget: a retry of the last attempt, or a claim or
//     rescue after an abandoned last attempt, that did not make the event
//     DEAD, and an event made DEAD before its budget was spent;
//   - a rescue that took a row whose lease is live;
//   - under lease=session, a lease still held after the session that took
//     it ended, and one gone while that session lives.
func ExplainRows(op Op, s State, observed []RowView) (rule, detail string) {
	seen := map[string]RowView{}
	for _, v := range observed {
		seen[v.Event] = v
	}
	for _, r := range s.Rows {
		got, ok := seen[r.Event]
		if !ok {
			continue
		}
		if rule, detail := explainBudget(op, s, r, got); rule != "" {
			return rule, detail
		}
		if op.Kind == Rescue && r.Status == InProgress && r.LeaseLive && (got.Status != InProgress || got.LeaseExpired) {
			return fmt.Sprintf("rescue took %s whose lease is live", r.Event),
				fmt.Sprintf("after %v, %s is %s: a rescue must not change a live lease", op, r.Event, viewText(got, got.HasGen))
		}
		if s.Policy.SessionLease && r.Status == InProgress && r.LeaseLive && r.Holder != "" &&
			(got.Status == Ready || got.Status == InProgress && got.LeaseExpired) {
			// Only the holder's session ending ends a session lease, and
			// the model ends it then. A lock gone before is the
			// protocol's own unlock of a job it did not finish, or a
			// server connection shared through a transaction pooler
			// that another client's trouble ended.
			return "a session lease ended while its session lived",
				fmt.Sprintf("after %v, %s's lock is gone, but %s's session, which took it, has not ended: another worker may now take the job %s still works on", op, r.Event, r.Holder, r.Holder)
		}
		if got.Status != r.Status {
			continue
		}
		if s.Policy.SessionLease && !s.Policy.relaxed(NoStrandedRow) && r.Status == InProgress && !r.LeaseLive && !got.LeaseExpired {
			// Through a transaction pooler the lock stays on the server
			// connection the claim ran on, whoever uses it next. (With
			// no_stranded_row relaxed the read is allowed, readsAsHeld:
			// a mismatch then lies elsewhere.)
			return "a session lease outlived its session",
				fmt.Sprintf("after %v, %s's lease is still held, but the session that took it has ended: nobody can finish %s, and a session that runs on the server connection it was left on holds it too", op, r.Event, r.Event)
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

// explainBudget names a broken rule of the attempt budget on one row: r as
// the model has it after op, got as observed.
func explainBudget(op Op, s State, r Row, got RowView) (rule, detail string) {
	if s.Policy.relaxed(AttemptBudget) {
		return "", ""
	}
	budget := s.Policy.MaxAttempts
	switch {
	case got.Status == Dead && r.Status != Dead && budget == 0:
		return "event went DEAD without an attempt budget",
			fmt.Sprintf("after %v, %s is DEAD, but the protocol declares no max_attempts", op, r.Event)
	case got.Status == Dead && r.Status != Dead && r.Gen < int64(budget):
		return "event went DEAD before its attempt budget was spent",
			fmt.Sprintf("after %v, %s is DEAD after %d of max_attempts=%d attempts", op, r.Event, r.Gen, budget)
	case r.Status != Dead || got.Status == Dead:
		return "", ""
	case op.Kind == Retry && op.Event == r.Event:
		return fmt.Sprintf("retry of the last attempt did not make %s DEAD", r.Event),
			fmt.Sprintf("after %v, %s is %s: its attempt %d of max_attempts=%d failed, so it must be DEAD", op, r.Event, viewText(got, got.HasGen), r.Gen, budget)
	case op.Kind == ClaimOp || op.Kind == Commit || op.Kind == Rescue:
		actor := "claim"
		if op.Kind == Rescue {
			actor = "rescue"
		}
		return actor + " left an exhausted event alive",
			fmt.Sprintf("after %v, %s is %s: its last attempt (%d of max_attempts=%d) expired, so the %s must make it DEAD", op, r.Event, viewText(got, got.HasGen), r.Gen, budget, actor)
	}
	return "", ""
}

// ExplainDead names a row observed DEAD that the model never let die:
// without an attempt budget, or before the budget was spent. It is checked
// ahead of a step's outcome, because a claim that buries a row too early
// also returns less than it should, and the burial is the cause.
func ExplainDead(op Op, s State, observed []RowView) (rule, detail string) {
	seen := map[string]RowView{}
	for _, v := range observed {
		seen[v.Event] = v
	}
	for _, r := range s.Rows {
		if got, ok := seen[r.Event]; ok && got.Status == Dead && r.Status != Dead && !s.exhausted(r) {
			return explainBudget(op, s, r, got)
		}
	}
	return "", ""
}
