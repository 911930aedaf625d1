package machine

import (
	"fmt"

	"github.com/outboxlab/outboxlab/model"
)

// drain ends every check: everyone resumed or respawned, open transactions
// rolled back, every lease expired and every row due, then claim and
// complete until nothing is claimable. Every event must end SENT: this is
// what catches a row stranded by a dead worker or a lost reply.
func (r *run) drain() {
	r.draining = true
	r.log("     -- drain --")
	for _, w := range r.workers {
		switch {
		case r.dead[w]:
			r.exec(model.Op{Kind: model.Respawn, Worker: w}, func() model.Outcome { return r.runSignal(w, model.Respawn) })
		case !r.running(w):
			r.exec(model.Op{Kind: model.Resume, Worker: w}, func() model.Outcome { return r.runSignal(w, model.Resume) })
		}
		if r.inTx(w) {
			r.exec(model.Op{Kind: model.Rollback, Worker: w}, func() model.Outcome { return r.runEndTx(w, model.Rollback) })
		}
	}
	r.releaseAll()
	w := r.workers[0]
	for i := 0; i <= 3*len(r.model().Rows); i++ {
		got := r.exec(model.Op{Kind: model.ClaimOp, Worker: w}, func() model.Outcome { return r.runClaim(w, model.ClaimOp) })
		if got.Kind == model.Unknown {
			// A connection a restart broke while w was paused: the claim
			// may have landed, owned by nobody. Release it and go on.
			r.releaseAll()
			continue
		}
		if got.Kind != model.Claimed {
			break
		}
		op := model.Op{Kind: model.Complete, Worker: w, Event: got.Event, Gen: got.Gen}
		r.exec(op, func() model.Outcome { return r.runOutcome(op) })
	}
	for _, row := range r.rows {
		if row.Status != model.Sent {
			r.fail("an event never reached SENT",
				fmt.Sprintf("after the drain %s is %s: an event never reached SENT (stranded row)", row.Event, rowText(row.RowView)))
		}
	}
}

// releaseAll expires every live lease and makes every waiting row due.
func (r *run) releaseAll() {
	for _, row := range r.model().Rows {
		e := row.Event
		switch {
		case row.Status == model.InProgress && row.LeaseLive:
			r.exec(model.Op{Kind: model.Expire, Event: e}, func() model.Outcome { return r.runFixture(model.Expire, e) })
		case row.Status == model.Ready && !row.Due:
			r.exec(model.Op{Kind: model.MakeDue, Event: e}, func() model.Outcome { return r.runFixture(model.MakeDue, e) })
		}
	}
}
