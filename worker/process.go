package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/workerproto"
)

// Process is the parent's handle on one worker process, which speaks the
// worker protocol (docs/worker-protocol.md): a Go worker (this executable
// re-executed, running a protocol file or a Go driver) and a worker
// executable in any language alike, through one client (contract.go).
type Process struct {
	Name   string
	spec   Spec
	c      *workerproto.Client
	paused bool
	// Backend is the server pid of the worker's current connection, as
	// its replies say (0: none, or a worker that does not say).
	Backend uint32
	// goWorker is set for the suite's own Go worker, which reports its
	// backend and serves the extensions (serve_wire.go).
	goWorker bool
	// The contract's state on the parent's side (contract.go), since a
	// process keeps nothing across a kill.
	fence  string
	batch  int
	expire sut.Stmt // the fixture a begin(expire e) sends
	// op is the outstanding request's type, split its split section.
	op    string
	split string
	// tx: a begin was answered ok and no commit or rollback since.
	tx bool
	// lost: the last request failed indefinitely; the worker answers
	// connection_lost to all but a reconnect, which the next request is
	// preceded by.
	lost bool
	// ready is an answer the parent made without the worker (a reset of
	// a worker that had nothing to reset), returned by the next await.
	ready *Response
}

// ErrHung is returned when a worker does not answer in time: it is blocked
// (on a lock, or on a connection that black-holes its traffic).
var ErrHung = errors.New("worker did not answer in time")

// ErrBlocked is returned by DoWatched (as a *BlockedError, which names the
// holder) when the server has the worker's statement waiting for a lock
// another worker of the check holds. The worker must then be killed, as
// after ErrHung.
var ErrBlocked = errors.New("worker's statement waits on another session's lock")

// BlockedError is ErrBlocked with the lock's holder: what the parent's
// probe named (a worker's name, for the machine).
type BlockedError struct{ By string }

func (e *BlockedError) Error() string { return ErrBlocked.Error() + " (" + e.By + ")" }

// Is makes errors.Is(err, ErrBlocked) hold.
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

// Spawn starts a worker and waits until it has connected. A Go worker's
// process comes from a small stock of started, idle processes (see
// warm.go), so a respawn costs a connection, not an exec.
func Spawn(spec Spec) (*Process, error) {
	spec = spec.withDefaults()
	if spec.Statements.Worker != nil {
		return spawnExternal(spec)
	}
	exe, err := executableFor(spec)
	if err != nil {
		return nil, err
	}
	c, err := takeWarm(exe)
	if err != nil {
		return nil, err
	}
	r, err := initGo(c, spec)
	if err != nil {
		return nil, err
	}
	return &Process{Name: spec.Name, spec: spec, c: c, goWorker: true, Backend: r.Backend, fence: r.Fence,
		batch: max(spec.Statements.Batch, 1)}, nil
}

// withDefaults is spec with its statement timeout defaulted and its
// connections' application_name set.
func (spec Spec) withDefaults() Spec {
	if spec.OpTimeout == 0 {
		spec.OpTimeout = 5 * time.Second
	}
	spec.App = appName(spec.Name, spec.Pooled)
	return spec
}

// initGo sends an idle Go worker its init (the spec, its connection) and
// waits for the answer; a worker that fails it is killed.
func initGo(c *workerproto.Client, spec Spec) (workerproto.Reply, error) {
	c.Worker = spec.Name
	ext, err := json.Marshal(initExt{Statements: spec.Statements, Pooled: spec.Pooled, Board: spec.Board, Slot: spec.Slot})
	if err != nil {
		c.Kill(false)
		return workerproto.Reply{}, err
	}
	r, err := c.Call(workerproto.Request{Type: workerproto.Init, Protocol: workerproto.Version, Worker: spec.Name,
		DSN: spec.ConnString, Schema: spec.Statements.Schema, OpTimeoutMS: spec.OpTimeout.Milliseconds(),
		WaitTimeoutMS: WaitTimeout.Milliseconds(), ApplicationName: spec.App, Ext: ext}, spec.OpTimeout+10*time.Second)
	switch {
	case err == workerproto.ErrTimeout:
		c.Kill(false)
		return r, fmt.Errorf("worker %s: %w", spec.Name, ErrHung)
	case err != nil:
		return r, err
	case r.Type == "error":
		c.Kill(false)
		return r, fmt.Errorf("worker %s could not start: %s", spec.Name, r.Text)
	}
	return r, nil
}

// startGo execs an idle Go worker process, of executable exe, that waits
// for its init.
func startGo(exe string) (*workerproto.Client, error) {
	// GOMAXPROCS=1 from the start, not from MainIfWorker's call: a runtime
	// started with one P runs its package initialisers on it, and is not
	// stopped and resized a moment later. A worker's start-up is what a
	// Kill costs, and kills are frequent (see docs/performance.md).
	c, err := workerproto.StartExecutable(exe, "", []string{envVar + "=1", "GOMAXPROCS=1"})
	if err != nil {
		return nil, err
	}
	// Failure messages name the executable, not its directory.
	c.Command = filepath.Base(exe)
	return c, nil
}

// Do sends one request and waits for its answer. A worker that does not
// answer within its statement timeout plus a margin returns ErrHung, and
// must then be killed: its late answer would be read as the next one's.
func (p *Process) Do(req Request) (Response, error) {
	if err := p.send(req); err != nil {
		return Response{}, err
	}
	return p.await(p.requestTimeout(req))
}

// Drive sends an OpDrive request and waits up to limit for its answer,
// ending on the way each backend the worker asks it to (endBackend), which
// it answers with OpEnded.
func (p *Process) Drive(req Request, limit time.Duration, endBackend func(backend uint32, epoch int64)) (Response, error) {
	deadline := time.Now().Add(limit)
	if err := p.send(req); err != nil {
		return Response{}, err
	}
	for {
		resp, err := p.await(time.Until(deadline))
		if err != nil || resp.Drive == nil || resp.Drive.EndBackend == 0 {
			return resp, err
		}
		endBackend(resp.Drive.EndBackend, resp.Drive.Epoch)
		if err := p.send(Request{Op: OpEnded}); err != nil {
			return Response{}, err
		}
	}
}

// send writes one request line; a paused process would never read it.
func (p *Process) send(req Request) error {
	if p.paused {
		return fmt.Errorf("%s is paused: a request would wait forever", p.Name)
	}
	return p.sendContract(req)
}

// DoWatched is Do for a statement that must never wait on a lock: every
// interval until the answer comes, blockedBy is asked which session, if
// any, holds a lock the worker's backend waits for, and a *BlockedError
// naming it is returned as soon as there is one. A statement that is only
// slow (a loaded machine) is waited for up to the usual limit, so a
// verdict of "blocked" always rests on the server's word.
func (p *Process) DoWatched(req Request, interval time.Duration, blockedBy func(Backend) string) (Response, error) {
	if err := p.send(req); err != nil {
		return Response{}, err
	}
	deadline := time.Now().Add(p.requestTimeout(req))
	probe := interval
	if req.MayWait {
		// A statement sent to wait shows up waiting within a millisecond
		// or two: asked early, then less and less often, the server says
		// so without the step paying a whole interval.
		probe = min(firstWaitProbe, interval)
	}
	for {
		wait := min(probe, time.Until(deadline))
		if wait <= 0 {
			return Response{}, ErrHung
		}
		resp, err := p.await(wait)
		if err != ErrHung {
			return resp, err
		}
		if by := blockedBy(p.ServerBackend()); by != "" {
			return Response{}, &BlockedError{By: by}
		}
		probe = min(2*probe, interval)
	}
}

// firstWaitProbe is how long a statement sent with MayWait runs before the
// parent first asks the server whether it waits on a lock.
const firstWaitProbe = 2 * time.Millisecond

// Pause stops the process (SIGSTOP): its connection and any open
// transaction stay as they are, as in a long GC pause or a stalled VM.
func (p *Process) Pause() error {
	if err := p.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	p.paused = true
	return nil
}

// Resume continues a paused process (SIGCONT).
func (p *Process) Resume() error {
	if err := p.signal(syscall.SIGCONT); err != nil {
		return err
	}
	p.paused = false
	return nil
}

// Paused reports whether the process is stopped.
func (p *Process) Paused() bool { return p.paused }

// Kill sends SIGKILL and waits for the exit. The server rolls back the
// worker's open transaction when it notices the connection is gone.
func (p *Process) Kill() *os.ProcessState {
	p.c.Kill(true)
	p.paused = false
	return p.c.State()
}

// KillAsync sends SIGKILL and returns at once; the exit is collected in the
// background. For callers that only need the connection gone (they wait
// for the server backend), not the process's exit status.
func (p *Process) KillAsync() {
	p.c.Kill(false)
	p.paused = false
}

// ServerBackend is how to find the server backend of the worker's
// statements (Backend): its connection's pid, or through a pooler its
// application_name.
func (p *Process) ServerBackend() Backend {
	// A worker executable does not report its backend's pid: its backend
	// is found by its application_name, as through a pooler.
	return Backend{PID: p.Backend, App: p.spec.App, Pooled: p.spec.Pooled || !p.goWorker, direct: !p.spec.Pooled}
}

// signal sends sig to the worker's process.
func (p *Process) signal(sig syscall.Signal) error { return p.c.Signal(sig) }

// AppName is the application_name of the process's connections, its own.
func (p *Process) AppName() string { return p.spec.App }

// Pid is the worker's process id (for logs, never for failure messages).
func (p *Process) Pid() int { return p.c.Pid() }

// KilledBySIGKILL reports whether a process state is a death by SIGKILL.
func KilledBySIGKILL(st *os.ProcessState) bool {
	ws, ok := st.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}
