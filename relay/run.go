package relay

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
)

// claimSet is what a worker holds between its claim and its complete: the
// rows of one claim and how far its relay loop got with them.
type claimSet struct {
	rows      []heldRow
	published bool // every row's record acknowledged
	completed bool // every row's complete sent
}

type heldRow struct {
	id, event string
	gen       int64
}

// run is one check in progress.
type run struct {
	h            *Harness
	p            Program
	topic, group string
	from         int64 // the topic's end when the check began
	step         int   // index of the step running; the drain's continue the count
	held         map[string]*claimSet
	paused, dead map[string]bool
	claims       map[string]int64 // per event, the suite's own count of claims
	latest       map[string]int64 // per event, the generation of its latest claim
	serial       int
	hist         History
	coverage     map[string]int
	lines        []string
}

func (r *run) log(format string, args ...any) {
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

// exec runs one step and logs it with its result.
func (r *run) exec(s Step) error {
	res, err := r.do(s)
	if err != nil {
		return fmt.Errorf("step %d (%s): %w", r.step+1, s, err)
	}
	r.log("%3d. %s -> %s", r.step+1, s, res)
	r.step++
	return nil
}

func (r *run) do(s Step) (string, error) {
	w := s.Worker
	if w != "" && s.Kind != Resume && r.paused[w] && s.Kind != Kill {
		return "skipped (paused)", nil
	}
	switch s.Kind {
	case Next:
		return r.next(w, false)
	case NextAckLost:
		return r.nextAckLost(w)
	case Kill:
		return r.kill(w)
	case Pause:
		return r.pause(w)
	case Resume:
		if !r.paused[w] {
			return "skipped (running)", nil
		}
		if err := r.h.pool.Get(w).Resume(); err != nil {
			return "", err
		}
		r.paused[w] = false
		return "resumed", nil
	case ExpireLease:
		return r.expire(s.Event)
	case Consume, ConsumeCrash:
		return r.consume(s.Kind == ConsumeCrash)
	case MakeDue:
		return r.makeDue(s.Event)
	case RunRescue:
		return r.rescue()
	case BrokerRestart:
		if !r.h.Broker.Embedded() {
			return "skipped (an external broker is not restarted)", nil
		}
		if err := r.h.Broker.Restart(); err != nil {
			return "", err
		}
		r.coverage[ClassBrokerRestart]++
		r.h.warm = map[string]int{} // every connection broke
		return "restarted", nil
	}
	return "", fmt.Errorf("unknown step kind %q", s.Kind)
}

func (r *run) kill(w string) (string, error) {
	if r.dead[w] {
		return "skipped (dead)", nil
	}
	if cs := r.held[w]; cs != nil && cs.published && !cs.completed {
		r.coverage[ClassKillAfterAck]++
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.h.pool.Kill(ctx, r.h.Inst.Conn, w); err != nil {
		return "", err
	}
	r.dead[w], r.paused[w] = true, false
	delete(r.h.warm, w)
	delete(r.held, w)
	return "killed", nil
}

func (r *run) pause(w string) (string, error) {
	if r.dead[w] {
		return "skipped (dead)", nil
	}
	if cs := r.held[w]; cs != nil && cs.published && !cs.completed {
		r.coverage[ClassPauseAfterAck]++
	}
	if err := r.proc(w).Pause(); err != nil {
		return "", err
	}
	r.paused[w] = true
	return "paused", nil
}

// proc is w's process, respawned when it was killed.
func (r *run) proc(w string) *worker.Process {
	if p := r.h.pool.Get(w); p != nil {
		return p
	}
	if err := r.h.pool.Spawn(w); err != nil {
		return nil
	}
	r.dead[w] = false
	return r.h.pool.Get(w)
}

// expire ends event's lease through the protocol's fixture, if it is in
// progress.
func (r *run) expire(event string) (string, error) {
	rows, err := r.state()
	if err != nil {
		return "", err
	}
	for _, row := range rows {
		if row.Event != event {
			continue
		}
		if row.Status != "INPROGRESS" {
			return "skipped (" + string(row.Status) + ")", nil
		}
		return "expired", r.fixture(sut.Expire, row.ID)
	}
	return "skipped (no row)", nil
}

func (r *run) makeDue(event string) (string, error) {
	rows, err := r.state()
	if err != nil {
		return "", err
	}
	for _, row := range rows {
		if row.Event == event {
			return "due", r.fixture(sut.Due, row.ID)
		}
	}
	return "skipped (no row)", nil
}

// rescue runs the protocol's rescue from the first worker's process.
func (r *run) rescue() (string, error) {
	p := r.proc(r.p.Workers[0])
	if p == nil {
		return "", fmt.Errorf("%s would not start", r.p.Workers[0])
	}
	resp, err := p.Do(worker.Request{Op: sut.Rescue})
	if err != nil {
		return "", fmt.Errorf("rescue: %w", err)
	}
	if resp.Err != "" {
		return "rescue failed: " + firstWords(resp.Err), nil
	}
	return "ok", nil
}

func (r *run) fixture(section, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return r.h.Inst.Driver().Exec(ctx, r.h.Inst.Conn, section, sut.Args{ID: id, Worker: "harness"})
}

func (r *run) state() ([]sut.StateRow, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.h.Inst.EnsureConn(ctx); err != nil {
		return nil, err
	}
	return r.h.Inst.Driver().ReadState(ctx, r.h.Inst.Conn)
}

// consume runs the consumer to the end of the topic; with crash, it dies
// after the first step of its first record (if there is one).
func (r *run) consume(crash bool) (string, error) {
	req, err := r.h.relayRequest(consumerName, r.topic)
	if err != nil {
		return "", err
	}
	req.Group, req.From = r.group, r.from
	req.Consumer = r.h.Opts.Consumer
	req.Consumer.CrashAfterFirstStep = crash
	p := r.proc(consumerName)
	if p == nil {
		return "", fmt.Errorf("the consumer process would not start")
	}
	resp, err := p.Do(worker.Request{Op: worker.OpConsume, Relay: req})
	if err != nil {
		if crash {
			r.h.pool.KillIdle(consumerName)
			r.coverage[ClassConsumerCrash]++
			return "crashed", nil
		}
		return "", fmt.Errorf("consumer: %w", err)
	}
	if resp.Err != "" || resp.Relay == nil {
		return "", fmt.Errorf("consumer: %s", resp.Err)
	}
	dedup := 0
	for _, c := range resp.Relay.Consumed {
		r.hist.Consumed = append(r.hist.Consumed, Consumption{Offset: c.Offset, EventID: c.EventID, Serial: c.Serial, Applied: c.Applied})
		if !c.Applied {
			dedup++
		}
	}
	out := fmt.Sprintf("read %d record(s), %d already applied", len(resp.Relay.Consumed), dedup)
	if resp.Relay.Err != "" {
		out += ", then stopped: " + firstWords(resp.Relay.Err)
	}
	return out, nil
}

// finish reads what the check left: outbox rows, the log, the effects.
func (r *run) finish() error {
	rows, err := r.state()
	if err != nil {
		return err
	}
	r.hist.Events = r.p.Events
	r.hist.Final = map[string]string{}
	for _, row := range rows {
		r.hist.Final[row.Event] = string(row.Status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if r.hist.Log, err = r.h.Broker.ReadTopic(ctx, r.topic, r.from); err != nil {
		return err
	}
	r.hist.Effects = map[string]int{}
	dbRows, err := r.h.Inst.Conn.Query(ctx, "SELECT event, count(*) FROM relay_effects GROUP BY event")
	if err != nil {
		return fmt.Errorf("read the consumer's effects: %w", err)
	}
	defer dbRows.Close()
	for dbRows.Next() {
		var e string
		var n int
		if err := dbRows.Scan(&e, &n); err != nil {
			return err
		}
		r.hist.Effects[e] = n
	}
	return dbRows.Err()
}

// firstWords keeps an error's first clause: no addresses or ports in a
// program line, which must read the same on every run.
func firstWords(s string) string {
	for i, c := range s {
		if c == ':' {
			return s[:i]
		}
	}
	return s
}
