package machine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/outboxlab/outboxlab/faults"
	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
	"pgregory.net/rapid"
)

// Harness runs checks of one protocol. Worker processes are kept across
// checks (a check resets the table, resumes paused workers, respawns
// killed ones and rolls back open transactions) so that a check costs the
// SQL it runs, not process start-up.
type Harness struct {
	Cfg      Config
	Srv      *pgserver.Server
	Inst     *sut.Instance
	Coverage Coverage
	Faults   FaultInjector // nil unless Cfg.Faults

	mu      sync.Mutex
	pool    *worker.Pool
	program []string // the current check's program, one line a step
	// recorded is the current check's program as a value (record.go).
	recorded Program
	failure  *Violation
	trace    *recorder // set while Trace replays a program, nil otherwise
	checks   int
	steps    int
	elapsed  time.Duration
	// sqlTime is the wall time spent waiting on PostgreSQL: worker
	// statements (pipe included) and the harness's reads and fixtures.
	sqlTime time.Duration
	// stateReads counts the state queries the checks ran (bench's share
	// of a step's round trips that are observation).
	stateReads int
	// waiter is the worker whose waiting step was still outstanding when
	// its check ended (see wait.go), killed before the next one starts.
	waiter string
	// walWriterStopped: under async-commit, this run stopped the WAL
	// writer (prepareServer), so that a crash loses exactly what came
	// after the last durable point.
	walWriterStopped bool
	// workerConn is where the workers connect without a fault proxy
	// (workerConnString), once asked.
	workerConn string
}

// SQLTime is the time the checks so far spent waiting on PostgreSQL.
func (h *Harness) SQLTime() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sqlTime
}

// StateReads is how many state queries the checks so far ran: the reads
// after each step, and those that explain a failure.
func (h *Harness) StateReads() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stateReads
}

// timed runs f and adds its wall time to the SQL share.
func (h *Harness) timed(f func()) {
	start := time.Now()
	f()
	d := time.Since(start)
	h.mu.Lock()
	h.sqlTime += d
	h.mu.Unlock()
}

// FaultInjector is what the network and server faults offer the machine
// (implemented in faults/); the machine stays independent of toxiproxy.
type FaultInjector interface {
	// WorkerConnString is where worker w connects (its own proxy).
	WorkerConnString(w string) string
	// LoseRequest makes w's next statement never reach the server.
	LoseRequest(w string) (undo func(), err error)
	// LoseReply lets w's next statement run and commit, and loses its reply.
	LoseReply(w string) (undo func(), err error)
	// CanRestart reports whether the server may be crashed and restarted
	// losing nothing (single): the concurrent mode's restart.
	CanRestart() bool
	// Restart crashes the server and starts it again: under async-commit
	// a crash that loses the unflushed WAL.
	Restart(ctx context.Context) error
	// ServerFault is the server fault the deployment suffers.
	ServerFault() pgserver.Fault
	// Rewinds reports whether that fault may lose acknowledged commits.
	Rewinds() bool
	// MarkDurable makes every commit so far durable.
	MarkDurable(ctx context.Context) error
	// Stall stops replication to the standby from now on.
	Stall(ctx context.Context) error
	// Failover kills the primary and promotes the standby.
	Failover(ctx context.Context) (pgserver.FailoverReport, error)
	// Resume ends a stall and wakes a stopped WAL writer.
	Resume() error
}

var _ FaultInjector = (*faults.Injector)(nil)

// AttachFaults gives the harness an injector for its server (a proxy per
// worker for lost requests and replies, restarts when this run owns the
// server). Call it before the first check: workers already running keep
// their direct connection. The returned close stops the proxies.
func (h *Harness) AttachFaults() (close func(), err error) {
	in, err := faults.NewFor(h.Srv, h.Inst.Statements.Schema)
	if err != nil {
		return nil, err
	}
	h.Faults = in
	return in.Close, nil
}

// Violation is a broken rule: Rule is the deterministic failure message
// rapid shrinks on; Detail is the full explanation with the step.
type Violation struct {
	Rule   string
	Detail string
}

// New prepares a harness for an installed protocol.
func New(srv *pgserver.Server, inst *sut.Instance, cfg Config) *Harness {
	h := &Harness{Cfg: cfg, Srv: srv, Inst: inst}
	h.pool = worker.NewPool(h.workerSpec)
	return h
}

// workerSpec is what worker name's process needs: through its own proxy
// when faults are attached.
func (h *Harness) workerSpec(name string) worker.Spec {
	cs := h.Inst.ConnString
	if name == rescuer {
		// The rescuer is not a network fault's target, nor a worker
		// behind a pooler: it connects directly.
		return worker.Spec{Name: name, ConnString: cs, Statements: h.Inst.Statements, OpTimeout: h.Cfg.OpTimeout}
	}
	if h.Faults != nil {
		cs = h.Faults.WorkerConnString(name)
	} else if h.Srv.Pooled() {
		// preparePool has asked already: an error there ended the check.
		cs, _ = h.workerConnString()
	}
	return worker.Spec{Name: name, ConnString: cs, Statements: h.Inst.Statements, OpTimeout: h.Cfg.OpTimeout, Pooled: h.Srv.Pooled()}
}

// Close kills every worker process.
func (h *Harness) Close() { h.pool.Close() }

// Program is the last check's program: after a failed rapid.Check, the
// shrunk counterexample, since rapid replays the minimal case last.
func (h *Harness) Program() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.program...)
}

// Failure is the violation of the last check, nil if it passed.
func (h *Harness) Failure() *Violation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failure
}

// Stats reports checks and steps run so far and the time spent in them.
func (h *Harness) Stats() (checks, steps int, elapsed time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.checks, h.steps, h.elapsed
}

// Check is one rapid check: reset, a random program, then the drain.
func (h *Harness) Check(t *rapid.T) { h.IsolatedCheck(Isolate{})(t) }

func WorkerName(i int) string { return fmt.Sprintf("w%d", i+1) }

func EventName(i int) string { return fmt.Sprintf("e%d", i+1) }

// begin prepares a check: the pool in a known state, the tables reset to
// the drawn number of events, the model in step.
func (h *Harness) begin(t *rapid.T) *run {
	h.mu.Lock()
	h.program, h.recorded = nil, Program{}
	h.failure = nil
	h.mu.Unlock()
	nWorkers := rapid.IntRange(h.Cfg.MinWorkers, h.Cfg.MaxWorkers).Draw(t, "workers")
	nEvents := rapid.IntRange(h.Cfg.MinEvents, h.Cfg.MaxEvents).Draw(t, "events")
	r := &run{h: h, t: t, ids: map[string]string{}, claimIDs: map[int]string{}, received: map[[2]string]receivedClaim{}, rescued: map[string]bool{}, dead: map[string]bool{}, procs: h.pool}
	for i := 0; i < nWorkers; i++ {
		r.workers = append(r.workers, WorkerName(i))
	}
	if err := h.preparePool(r.workers); err != nil {
		t.Fatalf("harness: %v", err)
	}
	var events []string
	state := model.NewWith(h.policy())
	for i := 0; i < nEvents; i++ {
		events = append(events, EventName(i))
		state = state.Step(model.Op{Kind: model.Enqueue, Event: EventName(i)})[0].Next
	}
	r.nextEvent = nEvents
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	h.timed(func() {
		if err = h.prepareServer(ctx); err == nil {
			err = h.Inst.Reset(ctx, events)
		}
		if err == nil {
			err = h.resetDurable(ctx)
		}
	})
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	r.states = []model.State{state}
	r.observe(model.Op{Kind: model.Enqueue, Event: strings.Join(events, ",")}, model.Outcome{Kind: model.OK})
	r.startRewindLog()
	r.log(fmt.Sprintf("setup: %d workers (%s), events %s", nWorkers, strings.Join(r.workers, " "), strings.Join(events, " ")))
	r.recordSetup(r.workers, events)
	return r
}

// preparePool makes every named worker a live, running process with no
// open transaction, whatever the previous check left (see worker.Pool).
func (h *Harness) preparePool(names []string) error {
	if h.waiter != "" {
		// A check that ended while a step waited: that worker's answer is
		// still to come, and would be read as its reset's.
		h.kill(h.waiter)
		h.waiter = ""
	}
	if h.Srv.Pooled() {
		if _, err := h.workerConnString(); err != nil {
			return err
		}
	}
	if h.Inst.Proto.Has(sut.Rescue) {
		names = append(slices.Clone(names), rescuer)
	}
	if h.Inst.Proto.SessionLease {
		return h.prepareSessions(names)
	}
	return h.pool.Prepare(names, func(name string) { h.kill(name) })
}

// policy is what the protocol's directives and sections promise.
func (h *Harness) policy() model.Policy {
	p := h.Inst.Proto.Policy()
	p.Relax = h.Cfg.Relax
	p.Lenient = p.Lenient && !h.Cfg.Strict
	return p
}

// kill SIGKILLs a worker and waits until the server has ended its backend,
// so its open transaction's locks are gone before the next step. The wait
// is time spent waiting on PostgreSQL.
func (h *Harness) kill(name string) error {
	var err error
	h.timed(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		released := func() {}
		if p := h.pool.Get(name); p != nil {
			released = h.pooledRelease(ctx, p.ServerBackend())
		}
		if err = h.pool.Kill(ctx, h.Inst.Conn, name); err == nil {
			released()
		}
	})
	return err
}
