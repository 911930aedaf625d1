package worker

import (
	"fmt"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
)

// Fate is what a worker's answer to an operation means for a concurrent
// history.
type Fate int

const (
	// Known: the answer has the outcome.
	Known Fate = iota
	// Lost: the connection failed and a fault was injected that explains
	// it; the outcome is unknown.
	Lost
	// Broken: the protocol's failure (a result its section may not return,
	// a server error) or a lost connection with no fault to explain it.
	Broken
)

// Judge sorts resp, the answer to op, by the rule that an outcome is
// unknown only when an injected fault hit it (faulted). For Broken it
// names the rule and says what happened. The parent-driven steps and a
// self-driving worker (drive.go) judge with this one function.
func Judge(op model.Op, resp Response, faulted bool) (fate Fate, rule, detail string) {
	name := sut.RuleName(op.Kind)
	switch {
	case resp.Err == "":
		return Known, "", ""
	case resp.Protocol:
		return Broken, resp.BrokenRule(), fmt.Sprintf("%v failed: %s", op, resp.Err)
	case resp.ServerErr:
		return Broken, name + " failed with a server error", fmt.Sprintf("%v failed: %s", op, resp.Err)
	case faulted:
		return Lost, "", ""
	case resp.Timeout:
		return Broken, name + " timed out", fmt.Sprintf("%v did not return in its statement timeout, and no fault was injected: %s", op, resp.Err)
	}
	return Broken, name + " lost its connection with no fault injected",
		fmt.Sprintf("%v lost its connection, and no fault was injected: %s", op, resp.Err)
}
