package relay

import (
	"fmt"
)

// Outcome is one program's run: its log (one line a step, the drain's
// included), the properties it broke and the coverage it reached.
type Outcome struct {
	Lines      []string
	Violations []Violation
	Coverage   map[string]int
	History    History
}

// Failed reports whether a property broke.
func (o Outcome) Failed() bool { return len(o.Violations) > 0 }

// Broke reports whether rule is among the broken properties.
func (o Outcome) Broke(rule string) bool {
	for _, v := range o.Violations {
		if v.Rule == rule {
			return true
		}
	}
	return false
}

// Run runs a program, the drain after it, and judges the history. An
// error is the harness's (a process that would not start, a broker that
// would not answer), never a verdict.
func (h *Harness) Run(p Program) (Outcome, error) {
	r, err := h.begin(p)
	if err != nil {
		return Outcome{}, fmt.Errorf("harness: %w", err)
	}
	r.log("setup: workers %v, events %v, topic of one partition", p.Workers, p.Events)
	for _, s := range p.Steps {
		if err := r.exec(s); err != nil {
			return Outcome{Lines: r.lines}, err
		}
	}
	if err := r.drain(); err != nil {
		return Outcome{Lines: r.lines}, err
	}
	if err := r.finish(); err != nil {
		return Outcome{Lines: r.lines}, err
	}
	out := Outcome{Lines: r.lines, Violations: Judge(r.hist), Coverage: r.coverage, History: r.hist}
	for k, v := range Counts(r.hist) {
		out.Coverage[k] += v
	}
	return out, nil
}

// Coverage classes of relay mode, counted in --json coverage.
const (
	ClassPublished     = "published"      // records in the log
	ClassRedelivered   = "redelivered"    // records of an event beyond its first
	ClassAckLost       = "ack_lost"       // records in the log whose acknowledgment was lost
	ClassConsumerDedup = "consumer_dedup" // records the consumer found already applied
	ClassKillAfterAck  = "kill_after_ack" // a worker killed between acknowledgment and complete
	ClassPauseAfterAck = "pause_after_ack"
	// ClassStalePublish: a publication by a worker whose claim another
	// claim had already replaced (the article's paused publisher).
	ClassStalePublish  = "stale_publish"
	ClassConsumerCrash = "consumer_crash"
	ClassBrokerRestart = "broker_restart"
)

// RequiredClasses are the classes a pass must have reached, else it is
// inconclusive: a redelivery the consumer absorbed, the article's kill
// between ack and complete, and with faults the lost acknowledgment and
// (on the embedded broker, which can be restarted) the restart too. A
// pause after the ack and a consumer crash are counted, not required: the
// default budget reaches them on most seeds, not on every one.
func RequiredClasses(faults, canRestart bool) []string {
	out := []string{ClassPublished, ClassRedelivered, ClassConsumerDedup, ClassKillAfterAck}
	if faults {
		out = append(out, ClassAckLost)
		if canRestart {
			out = append(out, ClassBrokerRestart)
		}
	}
	return out
}
