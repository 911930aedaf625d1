package workerproto

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Client is the suite's handle on one worker process: one request
// outstanding at a time, each reply matched to it by in_reply_to.
type Client struct {
	Worker  string // the simulated worker's name (w1, rescuer, install)
	Command string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	out     *os.File
	replies *bufio.Reader
	partial []byte
	stderr  *tail
	exited  chan struct{}
	state   *os.ProcessState
	lastID  int64
	pending string // the type of the outstanding request, "" when none
}

// ErrTimeout is Await's error when no reply came within its limit. The
// request stays outstanding: a later Await discards its late reply.
var ErrTimeout = errors.New("the worker did not answer in time")

// Error is a worker that broke the contract: a line that is not JSON, a
// reply of the wrong type or to a request never sent, an exit. The process
// is of no further use.
type Error struct {
	Worker  string
	Command string
	Request string // the request's type
	// Problem is what went wrong, the same for every occurrence (a rule);
	// Detail the particulars (the line, the exit status).
	Problem string
	Detail  string
	Stderr  string // the last lines of its stderr
}

func (e *Error) Error() string {
	s := fmt.Sprintf("worker %s (%s): %s request: %s", e.Worker, e.Command, e.Request, e.Problem)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Stderr != "" {
		s += "\n  its stderr ends:\n    " + strings.ReplaceAll(e.Stderr, "\n", "\n    ")
	}
	return s
}

// Start runs command through /bin/sh (its words and quotes as a shell
// reads them) with exec, so that the process the suite signals is the
// worker's own, not a shell's. The worker dies with the suite.
func Start(command, worker string, env []string) (*Client, error) {
	return start(exec.Command("/bin/sh", "-c", "exec "+command), command, worker, env)
}

// StartExecutable runs the executable at path with no arguments and no
// shell before it: the suite's own Go workers, whose start-up every kill
// pays (a shell's start-up would be a part of it).
func StartExecutable(path, worker string, env []string) (*Client, error) {
	return start(exec.Command(path), path, worker, env)
}

func start(cmd *exec.Cmd, command, worker string, env []string) (*Client, error) {
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// A child the worker started may hold its stderr open: the exit is
	// not held up by it for longer than this.
	cmd.WaitDelay = time.Second
	c := &Client{Worker: worker, Command: command, cmd: cmd, stderr: &tail{}, exited: make(chan struct{})}
	cmd.Stderr = c.stderr
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	// Our own pipe, read with deadlines, as worker.Process does: a reply
	// written just before a kill is still read.
	out, in, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = in
	err = cmd.Start()
	in.Close()
	if err != nil {
		out.Close()
		c.stdin.Close()
		return nil, fmt.Errorf("start worker %s (%s): %w", worker, command, err)
	}
	c.out, c.replies = out, bufio.NewReaderSize(out, 1<<16)
	go func() { c.cmd.Wait(); c.state = c.cmd.ProcessState; close(c.exited) }()
	return c, nil
}

// Send writes a request with the next id. Only one may be outstanding:
// the caller awaits its reply (or kills the process) first.
func (c *Client) Send(req Request) error {
	c.lastID++
	req.ID = c.lastID
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	c.pending = req.Type
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		<-c.exited
		return c.broke(req.Type, "the process exited", c.state.String())
	}
	return nil
}

// Await reads the reply to the outstanding request within limit. A reply
// to an older request (a late answer after a timeout) is discarded.
func (c *Client) Await(limit time.Duration) (Reply, error) {
	deadline := time.Now().Add(limit)
	for {
		line, err := c.readLine(time.Until(deadline))
		if errors.Is(err, ErrTimeout) {
			return Reply{}, err
		}
		if err != nil {
			return Reply{}, err
		}
		var r Reply
		if err := json.Unmarshal(line, &r); err != nil {
			return Reply{}, c.broke(c.pending, "a line on stdout that is not JSON", quote(line))
		}
		switch {
		case r.InReplyTo == nil:
			return Reply{}, c.broke(c.pending, "a reply without in_reply_to", quote(line))
		case *r.InReplyTo < c.lastID:
			continue // late: its request was given up on
		case *r.InReplyTo > c.lastID:
			return Reply{}, c.broke(c.pending, "a reply to a request never sent", quote(line))
		case r.Type != "error" && r.Type != replyType(c.pending):
			return Reply{}, c.broke(c.pending, fmt.Sprintf("a reply of type %q (want %s or error)", r.Type, replyType(c.pending)), quote(line))
		}
		c.pending = ""
		return r, nil
	}
}

// Call is Send and Await.
func (c *Client) Call(req Request, limit time.Duration) (Reply, error) {
	if err := c.Send(req); err != nil {
		return Reply{}, err
	}
	return c.Await(limit)
}

func (c *Client) readLine(limit time.Duration) ([]byte, error) {
	if limit <= 0 {
		return nil, ErrTimeout
	}
	c.out.SetReadDeadline(time.Now().Add(limit))
	for {
		chunk, err := c.replies.ReadSlice('\n')
		c.partial = append(c.partial, chunk...)
		switch {
		case err == nil:
			line := append([]byte(nil), c.partial[:len(c.partial)-1]...)
			c.partial = c.partial[:0]
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			if len(c.partial) > 16<<20 {
				return nil, c.broke(c.pending, "a line longer than 16 MiB", "")
			}
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, ErrTimeout
		default:
			<-c.exited
			return nil, c.broke(c.pending, "the process exited", c.state.String())
		}
	}
}

func (c *Client) broke(request, problem, detail string) *Error {
	if request == "" {
		request = "no"
	}
	// Of no further use: killed, and waited for, so that all it wrote to
	// stderr before it misbehaved has been read.
	c.Kill(true)
	return &Error{Worker: c.Worker, Command: c.Command, Request: request, Problem: problem, Detail: detail, Stderr: c.StderrTail()}
}

// quote is a reply line for a message, cut short.
func quote(line []byte) string {
	if len(line) > 200 {
		line = append(line[:200:200], "..."...)
	}
	return fmt.Sprintf("%q", line)
}

// Signal sends sig to the worker's process.
func (c *Client) Signal(sig syscall.Signal) error { return c.cmd.Process.Signal(sig) }

// Kill sends SIGKILL and closes the pipes; wait says whether to wait for
// the exit.
func (c *Client) Kill(wait bool) {
	c.cmd.Process.Signal(syscall.SIGKILL)
	c.stdin.Close()
	c.out.Close()
	if wait {
		<-c.exited
	}
}

// State is the process's exit status, nil until it has exited.
func (c *Client) State() *os.ProcessState {
	select {
	case <-c.exited:
		return c.state
	default:
		return nil
	}
}

// Exited is closed when the process has exited.
func (c *Client) Exited() <-chan struct{} { return c.exited }

// Pid is the process id (for logs, never for failure messages).
func (c *Client) Pid() int { return c.cmd.Process.Pid }

// StderrTail is the last lines the worker wrote to stderr.
func (c *Client) StderrTail() string { return c.stderr.last(8) }

// tail keeps the end of a stream: the last 16 KiB.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 32<<10 {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-16<<10:]...)
	}
	return len(p), nil
}

func (t *tail) last(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimRight(string(t.buf), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}
