package faults

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/outboxlab/outboxlab/pgserver"
)

// Injector gives the state machine its network and server faults: every
// worker connects through a proxy of its own, and the server may be
// crashed and restarted when this run owns it.
type Injector struct {
	srv     *pgserver.Server
	workers string // where the proxies lead: the server, or its pooler
	proxies proxySet
	mu      sync.Mutex
	err     error // the first proxy that would not start
}

// New starts the workers' proxies in front of srv: in this process, or,
// when OUTBOXLAB_TOXIPROXY_URL is set, on that toxiproxy
// server (see externalFromEnv). Close removes them. On a pooler topology
// the proxies lead to the pooler's own database, whose connections have
// no schema's search_path: NewFor is for the workers of a protocol.
func New(srv *pgserver.Server) (*Injector, error) { return NewFor(srv, "") }

// NewFor is New for the workers of a protocol installed in schema: their
// proxies lead where srv.WorkerConnString says, the server or, on a pooler
// topology, the pooler's database for that schema.
func NewFor(srv *pgserver.Server, schema string) (*Injector, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := srv.WorkerConnString(ctx, schema)
	if err != nil {
		return nil, fmt.Errorf("faults: %w", err)
	}
	ps, err := newProxySet(cs)
	if err != nil {
		return nil, fmt.Errorf("faults: %w", err)
	}
	return &Injector{srv: srv, workers: cs, proxies: ps}, nil
}

// WorkerConnString is where worker w connects: its own proxy, created on
// first use. Should the proxy not start, w connects directly and the
// error comes back from the first fault injected on it.
func (in *Injector) WorkerConnString(w string) string {
	cs, err := in.proxies.connStringFor(w)
	if err != nil {
		in.mu.Lock()
		if in.err == nil {
			in.err = err
		}
		in.mu.Unlock()
		return in.workers
	}
	return cs
}

// LoseRequest arms a RequestLost on w's proxy until undo.
func (in *Injector) LoseRequest(w string) (undo func(), err error) {
	p, err := in.proxy(w)
	if err != nil {
		return nothing, err
	}
	return arm(RequestLost{p}, w)
}

// LoseReply arms a ReplyLost on w's proxy until undo.
func (in *Injector) LoseReply(w string) (undo func(), err error) {
	p, err := in.proxy(w)
	if err != nil {
		return nothing, err
	}
	return arm(ReplyLost{p}, w)
}

func (in *Injector) proxy(w string) (link, error) {
	in.mu.Lock()
	err := in.err
	in.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return in.proxies.get(w)
}

func arm(f Fault, w string) (func(), error) {
	undo, err := f.Inject(context.Background())
	if err != nil {
		return nothing, fmt.Errorf("%s on %s: %w", f.Name(), w, err)
	}
	return undo, nil
}

// CanRestart reports whether this run owns the server; a user's server is
// never crashed.
func (in *Injector) CanRestart() bool { return in.srv.Fault() == pgserver.FaultRestart }

// Restart crashes the server and starts it again (DBRestart).
func (in *Injector) Restart(ctx context.Context) error {
	if _, err := (DBRestart{in.srv}).Inject(ctx); err != nil {
		return fmt.Errorf("db_restart: %w", err)
	}
	return nil
}

// Close removes every proxy and closes the connections through them.
func (in *Injector) Close() { in.proxies.close() }

// ServerFault is the fault the server's deployment suffers: a restart
// that loses nothing (single), a crash that loses the unflushed WAL
// (async-commit), a failover (the standby topologies); none on a server
// this run does not own.
func (in *Injector) ServerFault() pgserver.Fault { return in.srv.Fault() }

// Rewinds reports whether the server's fault may lose acknowledged
// commits, so that the model must follow what was durable when.
func (in *Injector) Rewinds() bool {
	return in.srv.Fault() != pgserver.FaultNone && in.srv.Topology.Rewinds()
}

// MarkDurable makes every commit so far durable (pgserver.Server.MarkDurable).
func (in *Injector) MarkDurable(ctx context.Context) error { return in.srv.MarkDurable(ctx) }

// Stall stops replication to the standby from now on.
func (in *Injector) Stall(ctx context.Context) error { return in.srv.Stall(ctx) }

// Failover kills the primary and promotes the standby.
func (in *Injector) Failover(ctx context.Context) (pgserver.FailoverReport, error) {
	return in.srv.Failover(ctx)
}

// Resume ends a stall and wakes a stopped WAL writer.
func (in *Injector) Resume() error { return in.srv.Resume() }
