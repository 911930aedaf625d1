package model

// RescueSkippingLocked is every state a rescue pass that skips locked rows
// may leave, even while an open claim transaction holds an expired row
// (when Step refuses a rescue, since one that waits would block). A
// concurrent history needs it: its rescue runs while claims are open and
// either skips their rows (these transitions) or waits and is judged when
// the lock is released (Step, later in the linearization).
func (s State) RescueSkippingLocked() []Transition { return s.rescue() }
