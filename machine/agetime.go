package machine

import (
	"time"

	"github.com/outboxlab/outboxlab/model"
)

// An Age moves a live lease's deadline back by 60% of the declared lease,
// so that one Age leaves 40% of a declared lease and a shorter one expires
// (the rule "claim granted less than the declared lease"). That holds only
// while the lease is young by the clock too: on a machine loaded enough
// that a dozen steps with a crash recovery among them take longer than 40%
// of the lease (12 s of leased's 30), a lease of the declared length
// expired after one Age, and the verdict blamed the claim (seen once in a
// false-alarm sweep of token_random_bigint on async-commit, at a load
// average of 20 on two cores, not repeatable from its seed). The age
// action ages only a lease granted less than ageWindow of it ago.

// ageWindow is how much of the declared lease may have passed, by the
// clock, since a lease was granted for an Age to be the fixture's alone:
// 30%, leaving a tenth of the lease (3 s of 30) as the margin between the
// 40% an Age leaves and the time that has passed.
const ageWindow = 0.3

// noteGrants keeps when each lease op granted began: a claim's rows, an
// applied renew's row.
func (r *run) noteGrants(op model.Op, got model.Outcome) {
	var granted []string
	switch {
	case got.Kind == model.Claimed:
		for _, g := range got.Grants() {
			granted = append(granted, g.Event)
		}
	case op.Kind == model.Renew && got.Kind == model.Applied:
		granted = append(granted, op.Event)
	}
	r.clock.granted(granted)
}

// ageLeavesTime reports whether event's lease is young enough, by the
// clock, for an Age to leave it live if the claim granted the declared
// lease. After a step that may have rewound the server, the lease may be
// an earlier grant's, and the first grant counts.
func (r *run) ageLeavesTime(event string) bool {
	return r.clock.within(event, time.Duration(float64(r.h.Inst.Proto.Lease)*ageWindow))
}
