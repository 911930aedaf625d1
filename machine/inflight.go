package machine

import (
	"slices"

	"github.com/outboxlab/outboxlab/model"
)

// inFlight is what has begun in a worker and not ended: a step waiting on
// another worker's open claim transaction (wait.go), and a split section
// whose last part has not run (split.go), at most one of each. It is its
// own type so that the other kinds of step ask it two questions, whether
// anything is in flight (no fault, server fault or durable point moves
// while it is) and which workers it holds, and leave the rest to the
// files that start and end it.
type inFlight struct {
	// waiting is the step that waits on another worker's open claim
	// transaction, if one does; waitOn the worker whose transaction it
	// waits on; waitEnded the model's rows from which its end is checked
	// (see finishWait).
	waiting   *model.Op
	waitOn    string
	waitEnded [][]model.RowView
	// split is the first part of the split section whose last part has
	// not run yet (split.go), if any.
	split *model.Op
	// splitStepped says whether the split action has taken a step for the
	// open split since its first part (split_claim.go).
	splitStepped bool
}

// any reports whether a step waits or a split section is open.
func (f *inFlight) any() bool { return f.waiting != nil || f.split != nil }

// holders are the workers whose connection the step in flight holds: the
// waiting step's and the open split's.
func (f *inFlight) holders() []string {
	var out []string
	if f.waiting != nil {
		out = append(out, waiterOf(*f.waiting))
	}
	if f.split != nil {
		out = append(out, f.split.Holder())
	}
	return out
}

// splitOpen reports whether a split section is open; with kinds, one of
// those kinds' sections.
func (f *inFlight) splitOpen(kinds ...model.Kind) bool {
	if f.split == nil {
		return false
	}
	return len(kinds) == 0 || slices.Contains(kinds, f.split.Kind)
}

// takeWaitEnded returns the rows from which a waiting step's end is
// checked, once: nil when no waiting step ended with the step just run.
func (f *inFlight) takeWaitEnded() [][]model.RowView {
	w := f.waitEnded
	f.waitEnded = nil
	return w
}

// waitsOnTxOf reports whether the waiting step waits on w's open claim
// transaction.
func (f *inFlight) waitsOnTxOf(w string) bool { return f.waiting != nil && f.waitOn == w }
