package machine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
	"pgregory.net/rapid"
)

// Split steps (model/split.go says what they mean to the model; a claim's
// split is split_claim.go's). A complete, retry or renew of several
// statements is one transaction, but under READ COMMITTED each of its
// statements sees what others committed since the previous one: a check
// in one statement and a write by id in the next is a race, however the
// step is judged when it runs whole. The split action runs the first
// statements of such a section, leaves its transaction open, lets the
// other actors step, and then runs the rest:
//
//	2. w1.Complete(e1, gen=1) [1/2] -> ok
//	3. Expire(e1) -> ok
//	4. w2.Claim() -> claimed e1 gen=2
//	5. w1.Complete(e1, gen=1) [2/2] -> applied   // model: rejected
//
// After the first part the harness asks the server which rows the open
// transaction locks (sut.ProbeHeld), and the model holds those rows for
// it: claims skip them, fixtures and other outcomes do not touch them. At
// most one split is open at a time; while it is, no step waits, no fault
// is armed and the server does not restart, and the splitting worker takes
// no other step, so the model knows exactly what ran in between.

// splittable are the outcome kinds a split may run; a rescue may be split
// too (rescueSplit).
var splittable = []model.Kind{model.Complete, model.Retry, model.Renew}

// statementsToSplit is how many statements kind's section has when the
// machine may split it (at least 2), else 0. None is split when the expire
// fixture is not a plain update of the event's own row (a heartbeat in a
// table of workers, say): the harness could not then tell which rows the
// first part's locks keep the other steps from.
func (r *run) statementsToSplit(kind model.Kind) int {
	if !r.h.Inst.ProbesRows() {
		return 0
	}
	if n := r.h.Inst.Driver().StatementCount(sectionOf(kind)); n > 1 {
		return n
	}
	return 0
}

// splits reports whether the protocol has a section the machine may split.
func (r *run) splits() bool {
	return r.statementsToSplit(model.Rescue) > 0 || r.statementsToSplit(model.ClaimOp) > 0 ||
		slices.ContainsFunc(splittable, func(k model.Kind) bool { return r.statementsToSplit(k) > 0 })
}

// sectionOf is the section a kind runs: claim, complete, retry, renew, rescue.
func sectionOf(kind model.Kind) string { return strings.ToLower(string(kind)) }

// mayStartSplit reports whether a split may begin now.
func (r *run) mayStartSplit() bool {
	return r.split == nil && r.waiting == nil && !r.faultPending && !r.draining
}

// splitAction is the split action: with no split open, the first part of a
// multi-statement outcome, current or stale; with one open, the step that
// brings its race closer (the expiry of its row, then another worker's
// reclaim) or, drawn, its last part.
func (r *run) splitAction(t *rapid.T) {
	if r.split != nil {
		r.advanceSplit(t)
		return
	}
	if !r.mayStartSplit() {
		t.Skip("a step waits, a fault is armed, or the drain runs")
	}
	if r.expireForClaimSplit(t) {
		return
	}
	var cands []model.Op
	for _, c := range r.model().Claims {
		for _, kind := range splittable {
			op := model.Op{Kind: kind, Worker: c.Worker, Event: c.Event, Gen: c.Gen, Claim: c.ID, Part: model.Part{Upto: 1, Of: r.statementsToSplit(kind)}}
			if r.canSplit(op) == nil {
				cands = append(cands, op)
			}
		}
	}
	// The order the draw picks from, as the catalogue's seeds were measured.
	slices.SortFunc(cands, func(a, b model.Op) int { return strings.Compare(a.String(), b.String()) })
	if op := (model.Op{Kind: model.Rescue, Part: model.Part{Upto: 1, Of: r.statementsToSplit(model.Rescue)}}); r.canSplit(op) == nil {
		cands = append(cands, op)
	}
	for _, w := range r.workers {
		if op := (model.Op{Kind: model.ClaimOp, Worker: w, Part: model.Part{Upto: 1, Of: r.statementsToSplit(model.ClaimOp)}}); r.canSplit(op) == nil {
			cands = append(cands, op)
		}
	}
	op := pick(t, "split", cands)
	op.Part.Upto = rapid.IntRange(1, op.Part.Of-1).Draw(t, "split_after")
	r.runSplitFirst(op)
}

// canSplit says why the first part op cannot run now, or nil.
func (r *run) canSplit(op model.Op) error {
	w := op.Worker
	switch {
	case !r.mayStartSplit():
		return fmt.Errorf("a split is open, a step waits, a fault is armed or the drain runs")
	case op.Part.Of == 0 || r.statementsToSplit(op.Kind) != op.Part.Of || op.Part.Upto < 1 || op.Part.Upto >= op.Part.Of:
		return fmt.Errorf("the %s section cannot be split as %s", op.Kind, op.Part)
	case op.Kind == model.Rescue:
		return r.canSplitRescue()
	case op.Kind == model.ClaimOp:
		return r.canSplitClaim(w)
	case r.claimOf(op.Whole()).ID == 0:
		return fmt.Errorf("%s never received that claim", w)
	case !r.running(w) || r.inTx(w) || r.busy(w) || r.blocks(op) || r.procs.Stale(w) || !r.serverConnFree(w):
		// (A connection a restart broke while w was paused answers the
		// first part with an error: the split would be lost at once.)
		return fmt.Errorf("%s cannot run it now", w)
	}
	return nil
}

// advanceSplit is the split action while a split is open.
func (r *run) advanceSplit(t *rapid.T) {
	op := *r.split
	switch op.Kind {
	case model.Rescue:
		r.advanceRescueSplit(t)
		return
	case model.ClaimOp:
		r.advanceClaimSplit(t)
		return
	}
	s := r.model()
	e := op.Event
	i := rowIndex(s, e)
	if r.endHolderOf(func(row string) bool { return row == e }) {
		return
	}
	if rapid.Bool().Draw(t, "split_finish") {
		r.runSplitLast()
		return
	}
	expire := model.Op{Kind: model.Expire, Event: e}
	if i < 0 || r.blocks(expire) || s.Rows[i].Status != model.InProgress {
		r.runSplitLast() // its row is held (by the split, or maybe), or no claim can take it
		return
	}
	if s.Rows[i].LeaseLive {
		r.exec(expire, func() model.Outcome { return r.runFixture(model.Expire, e) })
		return
	}
	others := r.workersWhere(func(w string) bool { return w != op.Worker && r.running(w) && !r.inTx(w) && r.serverConnFree(w) })
	if len(others) == 0 {
		r.runSplitLast()
		return
	}
	w := pick(t, "worker", others)
	r.exec(model.Op{Kind: model.ClaimOp, Worker: w}, func() model.Outcome { return r.runClaim(model.Op{Kind: model.ClaimOp, Worker: w}) })
}

// endHolderOf takes the step that ends another worker's open claim
// transaction holding a row the open split's last part may write (in some
// model state), and reports whether there was one: the last part would
// wait on it, so that transaction ends first (a paused holder is resumed
// first).
func (r *run) endHolderOf(writes func(event string) bool) bool {
	holder := ""
	for _, s := range r.states {
		for _, row := range s.Rows {
			if writes(row.Event) && row.LockedBy != "" && row.LockedBy != r.split.Holder() && holder == "" {
				holder = row.LockedBy
			}
		}
	}
	switch {
	case holder == "":
		return false
	case !r.running(holder):
		r.exec(model.Op{Kind: model.Resume, Worker: holder}, func() model.Outcome { return r.runSignal(holder, model.Resume) })
	default:
		r.exec(model.Op{Kind: model.Commit, Worker: holder}, func() model.Outcome { return r.runEndTx(holder, model.Commit) })
	}
	return true
}

// runSplitFirst runs op's first part and holds the rows it locked.
func (r *run) runSplitFirst(op model.Op) {
	req := r.splitRequest(op)
	req.Op, req.Split = worker.OpSplit, &worker.SplitRequest{Section: sectionOf(op.Kind), Upto: op.Part.Upto}
	if got := r.exec(op, func() model.Outcome {
		_, unknown := r.request(waiterOf(op), req, op)
		return okOrUnknown(unknown)
	}); got.Kind == model.Unknown {
		return // its transaction went with the connection: no split is open
	}
	r.split, r.splitStepped = &op, false
	r.holdSplitRows()
	r.h.Coverage.add(CovSplitStep)
}

// runSplitLast runs the open split's last part: the rest of its
// statements, then the commit, judged as the whole step.
func (r *run) runSplitLast() {
	first := *r.split
	op := first
	op.Part.Upto = op.Part.Of
	req := r.splitRequest(first)
	req.Op, req.Split = worker.OpFinish, &worker.SplitRequest{Section: sectionOf(first.Kind), Upto: first.Part.Upto}
	r.split = nil
	r.exec(op, func() model.Outcome {
		resp, unknown := r.request(waiterOf(op), req, op)
		switch {
		case op.Kind == model.Rescue:
			return okOrUnknown(unknown)
		case op.Kind == model.ClaimOp:
			return r.claimAnswer(resp, unknown)
		}
		return r.outcomeOf(resp, unknown)
	})
}

// splitRequest is the request op's parts are made from: its outcome's, or
// the rescue's.
func (r *run) splitRequest(op model.Op) worker.Request {
	switch op.Kind {
	case model.Rescue:
		return rescueRequest
	case model.ClaimOp:
		return worker.Request{Op: "claim"}
	}
	return r.outcomeRequest(op.Whole())
}

// holdSplitRows asks the server which rows the open split's transaction
// locks and has the model hold them. A row the probe cannot tell about
// (its fixture's WHERE matched nothing) may be held or not: the model
// keeps both, and the next claim's answer decides. (A foreign key check's
// KEY SHARE lock is one: a claim's FOR UPDATE skips the row, a fixture's
// UPDATE does not wait for it.)
func (r *run) holdSplitRows() {
	holder := r.split.Holder()
	var held, maybe []string
	for _, row := range r.model().Rows {
		fixture := sut.Expire
		if row.Status == model.Ready {
			fixture = sut.Due
		}
		if row.LockedBy != "" {
			continue // another transaction's lock: the split cannot hold it too
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var lock sut.RowLock
		var err error
		r.h.timed(func() { lock, err = r.h.Inst.ProbeRow(ctx, fixture, r.ids[row.Event]) })
		cancel()
		switch {
		case err != nil:
			r.t.Fatalf("harness: probing %s's lock after %v: %v", row.Event, *r.split, err)
		case lock == sut.RowHeld:
			held = append(held, row.Event)
		case lock == sut.RowMaybe:
			maybe = append(maybe, row.Event)
		}
	}
	var next []model.State
	for _, s := range r.states {
		s = s.Hold(holder, held)
		next = append(next, s)
		for _, e := range maybe {
			next = append(next, s.Hold(holder, []string{e}))
		}
	}
	r.states = next
}

// canReplaySplit holds a replayed step to what may run while a split is
// open, and a part to the split it belongs to.
func (r *run) canReplaySplit(op model.Op) error {
	switch {
	case op.Part.First():
		if err := r.canSplit(op); err != nil {
			return err
		}
	case op.Part.Last():
		if r.split == nil || r.split.Whole() != r.withClaim(op).Whole() || r.split.Part.Of != op.Part.Of {
			return fmt.Errorf("no split %v is open", op.Whole())
		}
	case r.split != nil && (op.Kind == model.Restart || op.Kind == model.Rescue):
		return fmt.Errorf("a split is open: no %s", op.Kind)
	case r.split != nil && r.split.Kind == model.Rescue && isFixture(op.Kind):
		return fmt.Errorf("a rescue is split: no %s", op.Kind)
	default:
		return nil
	}
	for _, st := range r.states {
		if err := st.Precondition(op); err != nil {
			return err
		}
	}
	return nil
}
