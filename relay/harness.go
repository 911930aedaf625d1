package relay

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxlab/outboxlab/broker"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
	// The worker processes a relay starts are this binary: they answer
	// publish and consume with the ops relayops registers.
	"github.com/outboxlab/outboxlab/worker/relayops"
)

// Config is what a relay run varies.
type Config struct {
	MaxWorkers int // 2 or more
	MaxEvents  int
	Steps      int // average steps of a program
	// Faults adds lost acknowledgments and broker restarts to the kills,
	// pauses and consumer crashes every run has.
	Faults    bool
	OpTimeout time.Duration
}

// DefaultConfig is the CI configuration.
func DefaultConfig() Config {
	return Config{MaxWorkers: 3, MaxEvents: 3, Steps: 8, Faults: true, OpTimeout: 10 * time.Second}
}

// consumerName is the consumer's process in the pool.
const consumerName = "consumer"

// Harness runs relay programs against one installed protocol and one
// broker. Worker processes (and the consumer's) are kept across checks.
type Harness struct {
	Cfg    Config
	Opts   Options
	Inst   *sut.Instance
	Broker *broker.Broker
	acks   *broker.AckProxies // nil without faults
	pool   *worker.Pool
	checks int
	// topic is the run's one topic: each check reads it from where the
	// previous one ended (a producer keeps its connection and metadata
	// across checks, as a relay's does).
	topic string
	// warm holds, per worker, the pid of its process whose producer has a
	// connection that carried an acknowledged publish (kept across checks,
	// as the producer is): a lost acknowledgment then cuts a request that
	// reached the broker, rather than the connection's set-up.
	warm map[string]int
}

// New prepares a harness: the consumer's tables in the protocol's schema,
// and with faults a proxy per worker in front of the broker.
func New(ctx context.Context, inst *sut.Instance, b *broker.Broker, cfg Config, opts Options) (*Harness, error) {
	if inst.Proto.SessionLease {
		// Its programs expire leases with the expire fixture.
		return nil, fmt.Errorf("%s says lease=session: --broker does not support session leases yet", inst.Proto.File)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := inst.Conn.Exec(ctx, relayops.ConsumerTables); err != nil {
		return nil, fmt.Errorf("create the consumer's tables: %w", err)
	}
	h := &Harness{Cfg: cfg, Opts: opts, Inst: inst, Broker: b, warm: map[string]int{}, topic: inst.Statements.Schema + ".relay"}
	if err := b.CreateTopic(ctx, h.topic); err != nil {
		return nil, err
	}
	if cfg.Faults {
		h.acks = b.NewAckProxies()
	}
	h.pool = worker.NewPool(h.spec)
	return h, nil
}

func (h *Harness) spec(name string) worker.Spec {
	return worker.Spec{Name: name, ConnString: h.Inst.ConnString, Statements: h.Inst.Statements, OpTimeout: h.Cfg.OpTimeout, Relay: true}
}

// Close kills every process and stops the proxies.
func (h *Harness) Close() {
	h.pool.Close()
	if h.acks != nil {
		h.acks.Close()
	}
}

// CanRestart reports whether this run restarts the broker.
func (h *Harness) CanRestart() bool { return h.Cfg.Faults && h.Broker.Embedded() }

// begin readies a check: the topic's end, a fresh consumer group, the outbox
// reset to the program's events, the consumer's tables emptied, every
// process live with no open transaction.
func (h *Harness) begin(p Program) (*run, error) {
	h.checks++
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := &run{h: h, p: p, held: map[string]*claimSet{}, paused: map[string]bool{}, dead: map[string]bool{},
		claims: map[string]int64{}, latest: map[string]int64{}, coverage: map[string]int{}}
	r.topic = h.topic
	r.group = fmt.Sprintf("%s.consumer%d", h.topic, h.checks)
	h.Broker.UseGroup(r.group)
	var err error
	if r.from, err = h.Broker.End(ctx, r.topic); err != nil {
		return nil, err
	}
	if err := h.Inst.Reset(ctx, p.Events); err != nil {
		return nil, err
	}
	if _, err := h.Inst.Conn.Exec(ctx, "DELETE FROM relay_seen; DELETE FROM relay_effects"); err != nil {
		return nil, fmt.Errorf("empty the consumer's tables: %w", err)
	}
	if err := h.pool.Prepare(append(append([]string(nil), p.Workers...), consumerName), func(name string) { h.pool.KillIdle(name) }); err != nil {
		return nil, err
	}
	return r, nil
}

// relayRequest is the broker part of a request from worker w (through
// its proxy when faults are on).
func (h *Harness) relayRequest(w, topic string) (*worker.RelayRequest, error) {
	req := &worker.RelayRequest{Brokers: h.Broker.Seeds(), Topic: topic}
	if h.acks != nil && w != consumerName {
		via, err := h.acks.Addr(w)
		if err != nil {
			return nil, err
		}
		req.Via = via
	}
	return req, nil
}

// isWarm reports whether w's current process has a warm producer.
func (h *Harness) isWarm(w string) bool {
	p := h.pool.Get(w)
	return p != nil && h.warm[w] == p.Pid()
}
