package machine

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/outboxlab/outboxlab/model"
)

// A lease can run out by the clock during a check the machine slowed
// (model/clock.go): four failovers on a loaded machine took longer than
// token_random_bigint's 30 s lease, and the verdict was "e4's lease is
// expired, model has it live" on a correct protocol. When no state the
// model allows explains an outcome or the persisted rows, the harness
// tries the states in which the leases whose declared length has passed
// since their grant, by its clock, ran out; a match there is no violation,
// and the program says which lease the clock ended, in a comment line.
//
// The grant's time is when the granting step began, which is no later
// than the server's now() in it, so a lease of the declared length cannot
// have run out before then. After a step that may rewind the server, a
// lease may be one an earlier grant set, so the first grant's time counts.

// byClock returns states with every lease that may have run out by the
// clock run out in each combination, and a note naming those leases; nil
// and "" when no lease may have.
func (r *run) byClock(states []model.State) ([]model.State, string) {
	var out []model.State
	var spent []string
	for _, s := range states {
		mine := r.spentByClock([]model.State{s})
		out = append(out, s.RunOut(mine)...)
		for _, e := range mine {
			if !slices.Contains(spent, e) {
				spent = append(spent, e)
			}
		}
	}
	if len(spent) == 0 {
		return nil, ""
	}
	slices.Sort(spent)
	return model.Dedup(out), r.clockNote(spent)
}

// spentByClock lists the events whose live lease, in any of states, may
// have run out by the clock.
func (r *run) spentByClock(states []model.State) []string {
	var spent []string
	for _, s := range states {
		for _, row := range s.Rows {
			if row.Status == model.InProgress && row.LeaseLive && r.leaseRanOut(row) && !slices.Contains(spent, row.Event) {
				spent = append(spent, row.Event)
			}
		}
	}
	slices.Sort(spent)
	return spent
}

func (r *run) clockNote(spent []string) string {
	var why []string
	for _, e := range spent {
		why = append(why, fmt.Sprintf("%s's granted %.1fs ago", e, time.Since(r.clock.grantedAt(e)).Seconds()))
	}
	return fmt.Sprintf("     # the declared lease is %v: by the clock, a lease may have run out (%s)",
		r.h.Inst.Proto.Lease, strings.Join(why, ", "))
}

// ranOutBetween is before, the rows read before a step, with each live
// lease shown run out where after, the rows read after it, has it so, and
// those leases' events. A step that breaks a rule on its change
// (model.CheckChange) only through them did not run them out: the clock
// did (spentByClock), or the lease was granted for less than declared.
func ranOutBetween(before, after []model.RowView) ([]model.RowView, []string) {
	expired := map[string]bool{}
	for _, a := range after {
		expired[a.Event] = a.Status == model.InProgress && a.LeaseExpired
	}
	out := slices.Clone(before)
	var ran []string
	for i, b := range out {
		if expired[b.Event] && b.Status == model.InProgress && !b.LeaseExpired {
			out[i].LeaseExpired = true
			ran = append(ran, b.Event)
		}
	}
	return out, ran
}

// checkRanOut is called when op's change broke a rule of
// model.CheckChange: if leases that ran out between the reads account for
// it, they ran out by the clock (a note is logged, and it reports true) or
// too early, which is the grant's failure, named as such.
func (r *run) checkRanOut(befores [][]model.RowView, after []model.RowView, op model.Op, got model.Outcome) bool {
	if r.model().Policy.SessionLease {
		return false // model.ExplainRows names what ends a session lease
	}
	for _, before := range befores {
		shown, ran := ranOutBetween(before, after)
		if len(ran) == 0 || model.CheckChange(r.model().Policy, shown, after, op, got) != nil {
			continue
		}
		spent := r.spentByClock(r.states)
		for _, e := range ran {
			if !slices.Contains(spent, e) {
				r.failShortLease(op, e)
			}
		}
		r.logClock(r.clockNote(ran))
		return true
	}
	return false
}

// failShortLease ends the check for event's lease, which ran out before
// the declared lease had passed since its grant by the clock.
func (r *run) failShortLease(op model.Op, event string) {
	grantor := "claim"
	for _, row := range r.model().Rows {
		if row.Event == event && row.Renewed {
			grantor = "renew"
		}
	}
	detail := fmt.Sprintf("after %v, %s's lease has run out %.1fs after the %s that granted it, before the declared lease (%v) had passed",
		op, event, time.Since(r.clock.grantedAt(event)).Seconds(), grantor, r.h.Inst.Proto.Lease)
	if r.clock.grantedAt(event).IsZero() {
		detail = fmt.Sprintf("after %v, %s's lease has run out, and no fixture ran it out: the %s that granted it gave less than the declared lease (%v)",
			op, event, grantor, r.h.Inst.Proto.Lease)
	}
	r.fail(grantor+" granted less than the declared lease", detail)
}

// logClock logs a clock note unless the line before it is the same note.
func (r *run) logClock(note string) {
	r.h.mu.Lock()
	same := len(r.h.program) > 0 && r.h.program[len(r.h.program)-1] == note
	r.h.mu.Unlock()
	if !same {
		r.log(note)
	}
}

// leaseRanOut reports whether row's live lease, granted for the declared
// length (40% of it left after an Age), may have run out by now.
func (r *run) leaseRanOut(row model.Row) bool {
	lease := r.h.Inst.Proto.Lease
	if lease <= 0 || r.model().Policy.SessionLease {
		return false // only its session's end ends a session lease
	}
	return r.clock.spent(row.Event, lease, row.Aged)
}
