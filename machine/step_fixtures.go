package machine

import (
	"fmt"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
	"pgregory.net/rapid"
)

// The fixtures, run on the harness's own connection as the article's
// tests do: Expire and Age a live lease, MakeDue a row waiting for its
// backoff.

// fixture expires or ages a live lease or makes a waiting row due, on the
// harness's own connection, as the article's tests do.
func (r *run) fixture(t *rapid.T, kind model.Kind) {
	var cands []string
	for _, row := range r.model().Rows {
		if r.mayFixture(model.Op{Kind: kind, Event: row.Event}) == nil && (kind != model.Age || r.ageLeavesTime(row.Event)) {
			cands = append(cands, row.Event)
		}
	}
	e := pick(t, "event", cands)
	r.runOp(model.Op{Kind: kind, Event: e})
}

// fixtureApplies reports whether a fixture of kind has something to do on
// row: a live lease to expire or age, a waiting row to make due.
func fixtureApplies(kind model.Kind, row model.Row) bool {
	switch kind {
	case model.Expire, model.Age:
		return row.Status == model.InProgress && row.LeaseLive
	case model.MakeDue:
		return row.Status == model.Ready && !row.Due
	}
	return false
}

// mayFixture: an expire, age or due fixture needs its row in a state it
// applies to (fixtureApplies), unlocked by an open transaction; no
// fixture while a split rescue's read has chosen its rows.
func (r *run) mayFixture(op model.Op) error {
	if op.Kind == model.Age && !r.h.Inst.Proto.Has(sut.Age) {
		return fmt.Errorf("the protocol has no age section")
	}
	if r.inFlight.splitOpen(model.Rescue) {
		return fmt.Errorf("a rescue is split: its read chose its rows (split_rescue.go)")
	}
	s := r.model()
	i := rowIndex(s, op.Event)
	switch {
	case i < 0:
		return fmt.Errorf("no row %s to change", op.Event)
	case r.blocks(op):
		return fmt.Errorf("%s is locked by an open transaction", op.Event)
	case !fixtureApplies(op.Kind, s.Rows[i]):
		return fmt.Errorf("%s is not in a state the fixture applies to", op.Event)
	}
	return nil
}

func init() {
	registerStep(stepKind{(*run).mayFixture, execStep(func(r *run, op model.Op) model.Outcome { return r.runFixture(op.Kind, op.Event) })},
		model.Expire, model.MakeDue, model.Age)
}
