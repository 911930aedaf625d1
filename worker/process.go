package worker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is the parent's handle on one worker process.
type Process struct {
	Name  string
	spec  Spec
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// out is the read end of the worker's stdout, read by the goroutine
	// that sent the request (a reader goroutine and a channel cost a
	// goroutine hand-off per reply, about 5 us of the parent's CPU per
	// operation on the bench's 2 cores); partial is a reply line read in
	// part when a wait timed out.
	out     *os.File
	replies *bufio.Reader
	partial []byte
	stderr  *bytes.Buffer
	exited  chan struct{}
	state   *os.ProcessState
	paused  bool
	// Backend is the server pid of the worker's current connection.
	Backend uint32
	// ext is set for a worker executable's process (external.go), which
	// speaks the worker protocol; the fields above for the pipe are then
	// unused.
	ext *external
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

// Spawn starts a worker and waits until it has connected. The process
// comes from a small stock of started, idle processes (see warm.go), so a
// respawn costs a connection, not an exec.
func Spawn(spec Spec) (*Process, error) {
	if spec.OpTimeout == 0 {
		spec.OpTimeout = 5 * time.Second
	}
	if spec.Statements.Worker != nil {
		return spawnExternal(spec)
	}
	p, err := takeWarm()
	if err != nil {
		return nil, err
	}
	spec.App = appName(spec.Name, spec.Pooled)
	p.Name, p.spec = spec.Name, spec
	b, _ := json.Marshal(spec)
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.Kill()
		return nil, fmt.Errorf("send spec to %s: %w", spec.Name, err)
	}
	resp, err := p.await(spec.OpTimeout + 10*time.Second)
	if err != nil {
		p.Kill()
		return nil, err
	}
	if resp.Err != "" {
		p.Kill()
		return nil, fmt.Errorf("worker %s could not start: %s", spec.Name, resp.Err)
	}
	return p, nil
}

// start execs an idle worker process that waits for its spec.
func start() (*Process, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	// GOMAXPROCS=1 from the start, not from MainIfWorker's call: a runtime
	// started with one P runs its package initialisers on it, and is not
	// stopped and resized a moment later. A worker's start-up is what a
	// Kill costs, and kills are frequent (see docs/performance.md).
	cmd.Env = append(os.Environ(), envVar+"=1", "GOMAXPROCS=1")
	// The worker dies with its parent, whatever kills the parent.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &Process{cmd: cmd, stderr: &bytes.Buffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	// A pipe of our own rather than StdoutPipe, which Wait closes as soon
	// as the process exits: a reply the worker wrote just before it was
	// killed is still read, as when a goroutine read every line at once.
	out, in, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = in
	err = cmd.Start()
	in.Close() // the child has it: its death is our end of file
	if err != nil {
		out.Close()
		return nil, fmt.Errorf("start worker process: %w", err)
	}
	p.out, p.replies = out, bufio.NewReaderSize(out, 1<<16)
	go func() { p.cmd.Wait(); p.state = p.cmd.ProcessState; close(p.exited) }()
	return p, nil
}

// readLine reads the next reply line within limit: ErrHung when it has not
// come whole by then (the part read is kept for the next call), io.EOF
// once the process is gone. The line is good until the next call.
func (p *Process) readLine(limit time.Duration) ([]byte, error) {
	p.out.SetReadDeadline(time.Now().Add(limit))
	for {
		chunk, err := p.replies.ReadSlice('\n')
		p.partial = append(p.partial, chunk...)
		switch {
		case err == nil:
			line := p.partial[:len(p.partial)-1]
			p.partial = p.partial[:0] // line is good until the next call
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			if len(p.partial) > 1<<20 {
				return nil, fmt.Errorf("worker %s: a reply longer than 1 MiB", p.Name)
			}
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, ErrHung
		default:
			p.partial = nil
			return nil, io.EOF
		}
	}
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
	if p.ext != nil {
		return p.ext.send(p, req)
	}
	if _, err := p.stdin.Write(encodeRequest(req)); err != nil {
		return fmt.Errorf("send to %s: %w", p.Name, err)
	}
	return nil
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

func (p *Process) await(limit time.Duration) (Response, error) {
	if p.ext != nil {
		return p.ext.await(limit)
	}
	line, err := p.readLine(limit)
	switch {
	case err == io.EOF:
		<-p.exited
		p.out.Close()
		return Response{}, fmt.Errorf("worker %s exited (%v): %s", p.Name, p.state, lastLine(p.stderr.String()))
	case err != nil:
		return Response{}, err
	}
	resp, err := decodeResponse(line)
	if err != nil {
		return Response{}, fmt.Errorf("worker %s: bad reply %q: %w", p.Name, line, err)
	}
	p.Backend = resp.Backend
	return resp, nil
}

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
	if p.ext != nil {
		p.ext.c.Kill(true)
		p.paused = false
		return nil
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.stdin.Close()
	p.out.Close()
	<-p.exited
	p.paused = false
	return p.state
}

// KillAsync sends SIGKILL and returns at once; the exit is collected in the
// background. For callers that only need the connection gone (they wait
// for the server backend), not the process's exit status.
func (p *Process) KillAsync() {
	if p.ext != nil {
		p.ext.c.Kill(false)
		p.paused = false
		return
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.stdin.Close()
	p.out.Close()
	p.paused = false
}

// ServerBackend is how to find the server backend of the worker's
// statements (Backend): its connection's pid, or through a pooler its
// application_name.
func (p *Process) ServerBackend() Backend {
	// A worker executable does not report its backend's pid: its backend
	// is found by its application_name, as through a pooler.
	return Backend{PID: p.Backend, App: p.spec.App, Pooled: p.spec.Pooled || p.ext != nil}
}

// signal sends sig to the worker's process.
func (p *Process) signal(sig syscall.Signal) error {
	if p.ext != nil {
		return p.ext.c.Signal(sig)
	}
	return p.cmd.Process.Signal(sig)
}

// AppName is the application_name of the process's connections, its own.
func (p *Process) AppName() string { return p.spec.App }

// Pid is the worker's process id (for logs, never for failure messages).
func (p *Process) Pid() int {
	if p.ext != nil {
		return p.ext.c.Pid()
	}
	return p.cmd.Process.Pid
}

// KilledBySIGKILL reports whether a process state is a death by SIGKILL.
func KilledBySIGKILL(st *os.ProcessState) bool {
	ws, ok := st.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

func lastLine(s string) string {
	s = string(bytes.TrimSpace([]byte(s)))
	if i := bytes.LastIndexByte([]byte(s), '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
