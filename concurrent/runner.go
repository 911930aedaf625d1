package concurrent

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/faults"
	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
)

// Config is a concurrent run's budget. The run stops by itself: after
// Histories histories of at most Ops operations each, or after Duration.
type Config struct {
	Workers   int           // worker processes
	Events    int           // events enqueued at the start of each history
	MaxEvents int           // the fixture actor enqueues more up to this many
	Ops       int           // operations per history, the drain's excluded
	Histories int           // histories per run
	Duration  time.Duration // the whole run, checking included
	Faults    bool          // kill, pause, lost requests and replies, restarts
	Seed      uint64
	// Hold is the longest an open claim transaction is held before its
	// commit or rollback (a uniform draw below it): the window in which
	// other workers' statements meet its row lock.
	Hold         time.Duration
	OpTimeout    time.Duration // every statement's limit
	CheckTimeout time.Duration // porcupine's limit per history
	HTMLDir      string        // where a failing history's HTML goes ("": the temp dir)
	// NoCheck records histories without checking them: `outboxlab bench`
	// measures the driver alone.
	NoCheck bool
	// Phase, when set, is called just before each history's concurrent
	// part starts (true) and just after it ends (false), outside its
	// timing: `outboxlab bench` reads CPU counters there.
	Phase func(start bool)
}

// Default is `outboxlab check --concurrent`'s budget: 40 histories of 200
// operations, 3 workers over 3 events, faults on, at most a minute.
func Default() Config {
	return Config{Workers: 3, Events: 3, MaxEvents: 5, Ops: 200, Histories: 40, Duration: time.Minute,
		Faults: true, Hold: 30 * time.Millisecond, OpTimeout: time.Second, CheckTimeout: 20 * time.Second}
}

// Runner runs the histories of one installed protocol.
type Runner struct {
	cfg     Config
	srv     *pgserver.Server
	inst    *sut.Instance
	in      *faults.Injector // nil without faults
	workers []*actor
	rescuer *actor // nil without a rescue section
	super   supervisor
	// fixtureConn is the fixture actor's connection, kept across
	// histories (nil until the first, and after a restart broke it).
	fixtureConn *pgx.Conn
	rng         *rand.Rand // the run's draws, from Seed (RunMore goes on)
	next        int        // the next history's index
	// board is the memory the workers record their operations on and
	// the fault loop marks them on (worker/board.go), a slot each, the
	// rescuer's last.
	board *worker.Board
	// faultRound is the fault loop's next turn, and restartDue a restart
	// a history ended too soon for (faultloop.go).
	faultRound int
	restartDue bool
}

// ErrTokenFence is NewRunner's refusal of a fence=token protocol: the
// workers' board records int64 generations and the model fences by them,
// so a token would be judged as the generation 0.
var ErrTokenFence = errors.New("--concurrent does not support fence=token yet")

// ErrPooled refuses a pooler topology: the concurrent workers publish
// their connection's backend pid for the fault loop to end, and through a
// pooler that pid is PgBouncer's, not a server backend's.
var ErrPooled = errors.New("--concurrent does not run through a connection pooler yet")

// ErrSessionLease is NewRunner's refusal of a lease=session protocol: its
// leases end only when a session ends, which the concurrent mode's faults
// do not model yet (the state machine does).
var ErrSessionLease = errors.New("--concurrent does not support lease=session yet")

// NewRunner prepares a run: the fault proxies when cfg has faults, a
// worker process per worker (each behind its own proxy) and the rescuer's.
// Close ends them all. A fence=token protocol is refused (ErrTokenFence)
// before anything starts.
func NewRunner(srv *pgserver.Server, inst *sut.Instance, cfg Config) (*Runner, error) {
	if inst.Proto.Fence == sut.FenceToken {
		return nil, fmt.Errorf("%w: %s says fence=token, and the concurrent checker records and judges int64 generations only", ErrTokenFence, inst.Proto.File)
	}
	if srv.Pooled() {
		return nil, fmt.Errorf("%w: topology %s", ErrPooled, srv.Topology)
	}
	if inst.Proto.SessionLease {
		return nil, fmt.Errorf("%w: %s says lease=session, and the concurrent workers end no session", ErrSessionLease, inst.Proto.File)
	}
	r := &Runner{cfg: cfg, srv: srv, inst: inst, super: supervisor{connString: inst.ConnString, schema: inst.Statements.Schema}}
	// A worker records at most two operations (a Begin and its end) per
	// operation of the budget.
	board, err := worker.NewBoard(cfg.Workers+1, max(cfg.Events, cfg.MaxEvents), 2*cfg.Ops+8)
	if err != nil {
		return nil, err
	}
	r.board = board
	if cfg.Faults {
		in, err := faults.New(srv)
		if err != nil {
			board.Close()
			return nil, err
		}
		r.in = in
	}
	for i := range cfg.Workers {
		name := fmt.Sprintf("w%d", i+1)
		cs := inst.ConnString
		if r.in != nil {
			cs = r.in.WorkerConnString(name)
		}
		r.workers = append(r.workers, &actor{name: name, client: i, slot: board.Slot(i),
			spec: worker.Spec{Name: name, ConnString: cs, Statements: inst.Statements, OpTimeout: cfg.OpTimeout, Board: board.Path, Slot: i}})
	}
	if inst.Proto.Has(sut.Rescue) {
		// The rescuer connects directly: it is not a network fault's target.
		r.rescuer = &actor{name: "rescuer", client: cfg.Workers + 1, slot: board.Slot(cfg.Workers),
			spec: worker.Spec{Name: "rescuer", ConnString: inst.ConnString, Statements: inst.Statements, OpTimeout: cfg.OpTimeout}}
	}
	return r, nil
}

// Close kills every process and removes the proxies.
func (r *Runner) Close() {
	for _, a := range r.actors() {
		a.close()
	}
	if r.in != nil {
		r.in.Close()
	}
	r.super.close()
	if r.fixtureConn != nil {
		(&fixtures{conn: r.fixtureConn}).close()
	}
	r.board.Close()
}

func (r *Runner) actors() []*actor {
	if r.rescuer != nil {
		return append(append([]*actor(nil), r.workers...), r.rescuer)
	}
	return r.workers
}

// Lanes of the history besides the workers': the fixture actor's, the
// rescuer's and the fault loop's.
func (r *Runner) fixtureClient() int { return r.cfg.Workers }
func (r *Runner) faultClient() int   { return r.cfg.Workers + 2 }

// history is one history in progress.
type history struct {
	r       *Runner
	index   int
	rec     *recorder
	events  []string // enqueued so far (the fixture actor adds more)
	initial []string // enqueued by the reset
	// board has the history's budget (its operations left, its end),
	// whether it was stopped, and the restarts' marks, shared with the
	// workers.
	board *worker.Board
	// epoch (on the board) is raised at the start and at the end of each
	// server restart.
	epoch    *atomic.Int64
	fixtures *fixtures
	mu       sync.Mutex
	ids      map[string]string // event -> its row's id in the state query
	failure  *Failure          // a failure the driver saw itself
	// concurrentOps and concurrentTime measure the concurrent part (for
	// outboxlab bench): the operations recorded before the drain, and the
	// time from the history's start to the last actor's end.
	concurrentOps  int
	concurrentTime time.Duration
	concurrentMix  Mix
}

func (h *history) hasGen() bool { return h.r.inst.Statements.HasGen }

// take spends one operation of the budget; false when the history is over.
func (h *history) take() bool { return h.board.Take() }

// untilEnd is the time left until the history's end (negative after it).
func (h *history) untilEnd() time.Duration { return time.Duration(h.board.End() - worker.MonoNow()) }

// restarting reports whether the server is restarting.
func (h *history) restarting() bool { return h.board.Restarting().Load() != 0 }

func (h *history) countClaim(event string) int64 { return h.board.CountClaim(eventIndex(event)) }

// fail records a failure the driver saw (a server error, a result the
// format forbids, a hang) and stops the history.
func (h *history) fail(rule, detail string) (model.Outcome, worker.Response, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failure == nil {
		h.failure = &Failure{Rule: rule, Detail: detail}
	}
	h.board.Stop()
	return model.Outcome{}, worker.Response{}, false
}

// endBackend terminates a backend whose client is gone or cut, and waits
// until the server has ended it, so that its statement can no longer
// commit once its outcome is recorded as unknown. A server restart that
// began after epoch and has ended ended every backend already; one still
// running has not yet (its shutdown may let a statement commit first), so
// the wait goes on through it. False if the backend outlived 30 s.
func (r *Runner) endBackend(backend worker.Backend, epoch int64, now *atomic.Int64) bool {
	if backend.PID == 0 && !backend.Pooled {
		return true
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if restartedSince(epoch, now.Load()) || r.super.end(backend) == nil {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// restartedSince reports whether a server restart has ended between the
// epoch readings then and now: the epoch is raised at a restart's start
// and at its end, so it is odd while one runs.
func restartedSince(then, now int64) bool { return now >= then+2-then%2 }

// endBackend ends backend (Runner.endBackend); one that outlives the wait
// fails the history, whose outcome recorded as unknown could still take
// effect after its return.
func (h *history) endBackend(backend worker.Backend, epoch int64) {
	if !h.r.endBackend(backend, epoch, h.epoch) {
		h.fail("harness error", fmt.Sprintf("%s could not be ended in 30 s", backendName(backend)))
	}
}

// supervisor is the run's own connection for ending backends, shared by
// every actor and reconnected after a restart.
type supervisor struct {
	connString, schema string
	mu                 sync.Mutex
	conn               *pgx.Conn
}

// backendName names a backend in a failure: by pid, or by the worker
// executable's application_name (it does not report its pid).
func backendName(b worker.Backend) string {
	if b.Pooled {
		return fmt.Sprintf("the backends of %q", b.App)
	}
	return fmt.Sprintf("backend %d", b.PID)
}

// end terminates backend and waits until it is gone: a Go worker's by
// its pid, a worker executable's by its application_name (every backend
// of that name running or holding its work; the name is the process's
// own, worker.Backend).
func (s *supervisor) end(backend worker.Backend) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s.conn == nil || s.conn.IsClosed() {
		c, err := sut.Connect(ctx, s.connString, s.schema)
		if err != nil {
			return err
		}
		s.conn = c
	}
	err := backend.Terminate(ctx, s.conn)
	if err == nil {
		err = backend.AwaitGone(ctx, s.conn)
	}
	if err != nil {
		s.dropConn()
	}
	return err
}

func (s *supervisor) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropConn()
}

func (s *supervisor) dropConn() {
	if s.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		s.conn.Close(ctx)
		cancel()
		s.conn = nil
	}
}
