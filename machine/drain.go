package machine

import (
	"fmt"
	"slices"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
)

// drain ends every check: everyone resumed or respawned, open transactions
// rolled back (or, one a step waits on, committed), every lease expired, a rescue (when the protocol has one),
// every row due, then claim and complete until nothing is claimable. Every
// event must end SENT, or DEAD once its attempt budget is spent (the model
// allows DEAD only then): this is what catches a row stranded by a dead
// worker, a lost reply or a rescue that never returns it.
func (r *run) drain() {
	r.draining = true
	r.log("     -- drain --")
	for _, w := range r.workers {
		switch {
		case r.dead[w]:
			r.runOp(model.Op{Kind: model.Respawn, Worker: w})
		case !r.running(w):
			r.runOp(model.Op{Kind: model.Resume, Worker: w})
		}
		if r.inTx(w) {
			// A transaction a step waits on commits: the waiting step is
			// then judged against the claim it waited for, which is the
			// race it stands for. Any other rolls back.
			end := model.Rollback
			if r.inFlight.waitsOnTxOf(w) {
				end = model.Commit
			}
			r.runOp(model.Op{Kind: end, Worker: w})
		}
	}
	if r.inFlight.splitOpen() {
		// With every claim transaction ended, nothing holds its row; its
		// worker runs (no step pauses or kills it while a split is open).
		r.runSplitLast()
	}
	r.recoverAll()
	w := r.workers[0]
	// The bound is fixed before the loop: under done=delete a completed
	// row leaves the model's rows, and a bound read each round fell below
	// the rounds already run with rows still READY.
	rounds := 3 * len(r.model().Rows)
	rejected := false
	for i := 0; i <= rounds; i++ {
		got := r.runOp(model.Op{Kind: model.ClaimOp, Worker: w})
		if got.Kind == model.Unknown {
			// A connection a restart broke while w was paused: the claim
			// may have landed, owned by nobody. Release it and go on.
			r.recoverAll()
			continue
		}
		if got.Kind != model.Claimed {
			if !rejected || !r.unfinished() {
				break
			}
			// The drain's own complete was rejected and left its row
			// claimed: for a protocol whose claim returns no generation,
			// after a lost commit the model may not know which count the
			// row holds, and its first guess went out. Release the row
			// and claim it again (after each such rejection; a row left
			// with none is stranded).
			rejected = false
			r.recoverAll()
			continue
		}
		for _, g := range got.Grants() {
			// The claim just received: the worker's latest of the row (the
			// possible states may count its generation differently).
			op := r.withClaim(model.Op{Kind: model.Complete, Worker: w, Event: g.Event, Gen: g.Gen, Claim: r.latestClaim(w, g.Event)})
			if r.runOp(op).Kind == model.Rejected {
				rejected = true
			}
		}
	}
	if r.h.Cfg.Relax&model.NoStrandedRow != 0 {
		return
	}
	for _, row := range r.rows {
		if row.Status != model.Sent && row.Status != model.Dead {
			r.fail("an event never reached SENT",
				fmt.Sprintf("after the drain %s is %s: an event never reached SENT (stranded row)", row.Event, rowText(row.RowView)))
		}
	}
}

// unfinished reports whether some row is neither SENT nor DEAD.
func (r *run) unfinished() bool {
	return slices.ContainsFunc(r.rows, func(row sut.StateRow) bool { return row.Status != model.Sent && row.Status != model.Dead })
}

// recoverAll releases every row and, when the protocol has a rescue,
// runs it: a protocol whose claim leaves expired leases to the rescue
// gets them back only this way.
func (r *run) recoverAll() {
	r.releaseAll()
	if r.h.Inst.Proto.Has(sut.Rescue) {
		// A rescuer whose connection a restart broke finds out now
		// (unknown) and reconnects for the next try.
		for range 3 {
			if r.runOp(model.Op{Kind: model.Rescue}).Kind != model.Unknown {
				break
			}
		}
		r.releaseAll() // a rescue may return rows with a backoff
	}
}

// releaseAll expires every live lease and makes every waiting row due.
// Under lease=session it ends the sessions that hold leases instead.
func (r *run) releaseAll() {
	if r.sessionLeases() {
		for _, w := range r.workers {
			if r.holdsSession(w) {
				r.endSession(w)
			}
		}
	}
	for _, row := range r.model().Rows {
		e := row.Event
		switch {
		case r.sessionLeases() && row.Status == model.InProgress:
			// Its session ended above: no stored lease to expire.
		case row.Status == model.InProgress && row.LeaseLive:
			r.runOp(model.Op{Kind: model.Expire, Event: e})
		case row.Status == model.Ready && !row.Due:
			r.runOp(model.Op{Kind: model.MakeDue, Event: e})
		}
	}
}
