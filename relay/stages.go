package relay

import (
	"fmt"
	"strings"

	"github.com/outboxlab/outboxlab/broker"
	"github.com/outboxlab/outboxlab/worker"
)

// The stages of a worker's relay loop.
const (
	stageClaim    = "claim"
	stagePublish  = "publish"
	stageComplete = "complete"
)

// nextStage is what w's relay loop does next: claim when it holds
// nothing, then publish and complete in the relay's order.
func (r *run) nextStage(w string) string {
	cs := r.held[w]
	if cs == nil {
		return stageClaim
	}
	order := []string{stagePublish, stageComplete}
	if r.h.Opts.CompleteBeforePublish {
		order = []string{stageComplete, stagePublish}
	}
	for _, st := range order {
		if st == stagePublish && !cs.published || st == stageComplete && !cs.completed {
			return st
		}
	}
	return stageClaim
}

// next runs w's next stage (respawning w first if it was killed); with
// ackLost, the publish's acknowledgments are lost on w's proxy.
func (r *run) next(w string, ackLost bool) (string, error) {
	prefix := ""
	if r.dead[w] {
		prefix = "respawned, "
	}
	p := r.proc(w)
	if p == nil {
		return "", fmt.Errorf("%s would not start", w)
	}
	var out string
	var err error
	switch r.nextStage(w) {
	case stageClaim:
		out, err = r.claim(w, p)
	case stagePublish:
		out, err = r.publish(w, p, ackLost)
	default:
		out, err = r.complete(w, p)
	}
	if cs := r.held[w]; cs != nil && cs.published && cs.completed {
		delete(r.held, w)
	}
	return prefix + out, err
}

// nextAckLost runs w's loop up to its publish (claiming first if it holds
// nothing) and loses that publish's acknowledgments. Only a warm producer
// is cut: a cold one's connection set-up would fail before the record
// went out, and nothing would be learnt.
func (r *run) nextAckLost(w string) (string, error) {
	if r.dead[w] || !r.h.isWarm(w) || r.nextStage(w) == stageComplete {
		return "skipped (no warm publish ahead)", nil
	}
	claimed := ""
	if r.nextStage(w) == stageClaim {
		out, err := r.next(w, false)
		if err != nil || r.nextStage(w) != stagePublish {
			return out, err
		}
		claimed = out + ", then "
	}
	out, err := r.next(w, true)
	return claimed + out, err
}

func (r *run) claim(w string, p *worker.Process) (string, error) {
	resp, err := p.Do(worker.Request{Op: "claim"})
	if err != nil {
		return "", fmt.Errorf("claim: %w", err)
	}
	if resp.Err != "" {
		return "claim failed: " + firstWords(resp.Err), nil
	}
	if len(resp.Rows) == 0 {
		return "claimed nothing", nil
	}
	cs := &claimSet{}
	var names []string
	for _, row := range resp.Rows {
		r.claims[row.Event]++
		gen := row.Gen
		if !r.h.Inst.Statements.HasGen {
			gen = r.claims[row.Event] // the suite's own count, as the format says
		}
		cs.rows = append(cs.rows, heldRow{id: row.ID, event: row.Event, gen: gen})
		r.latest[row.Event] = gen
		names = append(names, fmt.Sprintf("%s gen=%d", row.Event, gen))
	}
	r.held[w] = cs
	return "claimed " + strings.Join(names, ", "), nil
}

// publish sends a record per held row and waits for each
// acknowledgment. A publish with none gives the claim up (its lease will
// expire and another worker will publish the event again): the relay is
// at least once.
func (r *run) publish(w string, p *worker.Process, ackLost bool) (string, error) {
	cs := r.held[w]
	if ackLost {
		undo, err := r.h.acks.LoseAcks(w)
		if err != nil {
			return "", err
		}
		defer undo()
	}
	var done []string
	for _, row := range cs.rows {
		req, err := r.h.relayRequest(w, r.topic)
		if err != nil {
			return "", err
		}
		r.serial++
		key := r.h.Opts.recordKey(row.event, row.gen)
		req.Key, req.EventID = key, key
		req.Payload = broker.Payload{Event: row.event, Generation: row.gen, Worker: w, Serial: r.serial}
		pub := Publication{Step: r.step, Worker: w, Event: row.event, Gen: row.gen, Serial: r.serial, AckLost: ackLost}
		resp, err := p.Do(worker.Request{Op: worker.OpPublish, Relay: req})
		if err != nil {
			return "", fmt.Errorf("publish: %w", err)
		}
		if resp.Err != "" || resp.Relay == nil {
			return "", fmt.Errorf("publish: %s", resp.Err)
		}
		if resp.Relay.Err != "" {
			r.hist.Pubs = append(r.hist.Pubs, pub)
			delete(r.held, w)
			delete(r.h.warm, w)
			return strings.Join(append(done, fmt.Sprintf("no ack for %s gen=%d (publication %d): gave the claim up", row.event, row.gen, r.serial)), ", "), nil
		}
		pub.Acked = true
		r.hist.Pubs = append(r.hist.Pubs, pub)
		r.h.warm[w] = p.Pid()
		stale := ""
		if latest := r.latest[row.event]; latest > row.gen {
			r.coverage[ClassStalePublish]++
			stale = fmt.Sprintf(" (stale: gen=%d claimed since)", latest)
		}
		done = append(done, fmt.Sprintf("published %s gen=%d (publication %d), acked%s", row.event, row.gen, r.serial, stale))
	}
	cs.published = true
	return strings.Join(done, ", "), nil
}

func (r *run) complete(w string, p *worker.Process) (string, error) {
	cs := r.held[w]
	var done []string
	for _, row := range cs.rows {
		resp, err := p.Do(worker.Request{Op: "complete", ID: row.id, Gen: row.gen})
		if err != nil {
			return "", fmt.Errorf("complete: %w", err)
		}
		c := Completion{Step: r.step, Worker: w, Event: row.event, Gen: row.gen, Applied: resp.Applied && resp.Err == ""}
		r.hist.Completions = append(r.hist.Completions, c)
		switch {
		case resp.Err != "":
			done = append(done, fmt.Sprintf("complete %s gen=%d failed: %s", row.event, row.gen, firstWords(resp.Err)))
		case c.Applied:
			done = append(done, fmt.Sprintf("completed %s gen=%d", row.event, row.gen))
		default:
			done = append(done, fmt.Sprintf("complete %s gen=%d rejected", row.event, row.gen))
		}
	}
	cs.completed = true
	return strings.Join(done, ", "), nil
}
