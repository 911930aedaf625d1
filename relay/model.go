// Package relay is relay mode: worker processes claim an outbox row,
// publish it to a Kafka-protocol broker, wait for the acknowledgment and
// complete it, while a consumer process applies the topic to PostgreSQL,
// deduplicating by event id. A program of steps (faults among them) is run
// against the real parts, and the record of what was published, what the
// broker holds and what the consumer applied is held to the properties of
// an at-least-once pipeline with a deduplicating consumer.
package relay

import (
	"fmt"
	"slices"

	"github.com/outboxlab/outboxlab/broker"
)

// Publication is one publish a worker attempted, in program order.
type Publication struct {
	Step   int // index of the program step that made it
	Worker string
	Event  string // the event id its claim returned
	Gen    int64
	Serial int
	Acked  bool
	// AckLost marks a publish whose acknowledgment an injected fault
	// dropped: the record may or may not be in the log.
	AckLost bool
}

// Completion is one complete a worker sent.
type Completion struct {
	Step    int
	Worker  string
	Event   string
	Gen     int64
	Applied bool
}

// History is what one run leaves to be judged: the relay's publications
// and completions as the workers saw them, and at the end, after the
// drain, the outbox rows, the broker's log and the consumer's effects.
type History struct {
	Events      []string          // enqueued, in order
	Final       map[string]string // status per event after the drain; missing: deleted
	Pubs        []Publication
	Completions []Completion
	// Consumed is what the consumer reported reading, in order, with
	// whether it applied each record or found its key already applied (a
	// consumer that crashed reports nothing of its last pass).
	Consumed []Consumption
	Log      []broker.Record
	Effects  map[string]int // applications per event, from the consumer's table
}

// Consumption is one record the consumer read.
type Consumption struct {
	Offset  int64
	EventID string
	Serial  int
	Applied bool
}

// Rule texts: deterministic, one per property, so that a failure found
// again while shrinking is recognised as the same one.
const (
	RulePublishedBeforeComplete = "an event ended SENT without an acknowledged, logged publication of its claim before the complete"
	RuleSameEventID             = "a record does not carry the event id its claim returned"
	RuleAppliedOnce             = "the consumer applied an event more than once"
	RuleNoEventLost             = "an event was never applied by the consumer"
)

// Violation is one broken property: Rule is its text, Detail the instance.
type Violation struct {
	Rule   string
	Detail string
}

// Judge holds a history to every property and returns each that broke,
// in a fixed order; one broken property never hides another.
func Judge(h History) []Violation {
	var out []Violation
	for _, check := range []func(History) []Violation{publishedBeforeComplete, sameEventID, appliedOnce, noEventLost} {
		out = append(out, check(h)...)
	}
	return out
}

// publishedBeforeComplete: the complete that made an event SENT came from
// a claim whose record the broker acknowledged, before that complete, and
// which is in the log.
func publishedBeforeComplete(h History) []Violation {
	logged := map[int]bool{}
	for _, r := range h.Log {
		logged[r.Payload.Serial] = true
	}
	var out []Violation
	for _, c := range h.Completions {
		if !c.Applied {
			continue
		}
		if status, ok := h.Final[c.Event]; ok && status != "SENT" {
			continue
		}
		ok := slices.ContainsFunc(h.Pubs, func(p Publication) bool {
			return p.Worker == c.Worker && p.Event == c.Event && p.Gen == c.Gen && p.Acked && p.Step < c.Step && logged[p.Serial]
		})
		if !ok {
			out = append(out, Violation{RulePublishedBeforeComplete, fmt.Sprintf(
				"%s ended SENT through %s's complete of gen=%d (step %d), with no acknowledged record of that claim in the log before it",
				c.Event, c.Worker, c.Gen, c.Step+1)})
		}
	}
	return out
}

// sameEventID: key and header of every record are the event id the claim
// returned (the payload names the row it came from).
func sameEventID(h History) []Violation {
	var out []Violation
	for _, r := range h.Log {
		if r.Key != r.Payload.Event || r.EventID != r.Payload.Event {
			out = append(out, Violation{RuleSameEventID, fmt.Sprintf(
				"record %d of %s (gen=%d) has key %q and event id %q, where the claim returned %q",
				r.Offset, r.Payload.Event, r.Payload.Generation, r.Key, r.EventID, r.Payload.Event)})
		}
	}
	return out
}

func appliedOnce(h History) []Violation {
	var out []Violation
	for _, e := range h.Events {
		if n := h.Effects[e]; n > 1 {
			out = append(out, Violation{RuleAppliedOnce, fmt.Sprintf("%s was applied %d times by the consumer", e, n)})
		}
	}
	return out
}

// noEventLost: every enqueued event that did not die of its attempt
// budget was applied by the end of the drain.
func noEventLost(h History) []Violation {
	var out []Violation
	for _, e := range h.Events {
		if h.Effects[e] == 0 && h.Final[e] != "DEAD" {
			status, ok := h.Final[e]
			if !ok {
				status = "deleted"
			}
			out = append(out, Violation{RuleNoEventLost, fmt.Sprintf("%s was never applied by the consumer (the outbox row is %s, %d record(s) of it in the log)",
				e, status, countRecords(h.Log, e))})
		}
	}
	return out
}

func countRecords(log []broker.Record, event string) int {
	n := 0
	for _, r := range log {
		if r.Payload.Event == event {
			n++
		}
	}
	return n
}

// Counts are the coverage a history shows: records published, records
// beyond the first of their event (redelivered), records whose
// acknowledgment was lost yet which the log holds (ack_lost), and records
// the consumer found already applied (consumer_dedup).
func Counts(h History) map[string]int {
	first := map[string]bool{}
	lost := map[int]bool{}
	for _, p := range h.Pubs {
		if p.AckLost {
			lost[p.Serial] = true
		}
	}
	c := map[string]int{ClassPublished: len(h.Log), ClassRedelivered: 0, ClassAckLost: 0, ClassConsumerDedup: 0}
	for _, r := range h.Consumed {
		if !r.Applied {
			c[ClassConsumerDedup]++
		}
	}
	for _, r := range h.Log {
		if first[r.Payload.Event] {
			c[ClassRedelivered]++
		}
		first[r.Payload.Event] = true
		if lost[r.Payload.Serial] {
			c[ClassAckLost]++
		}
	}
	return c
}
