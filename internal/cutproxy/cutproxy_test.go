package cutproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// server is an upstream that answers every line with "ok <line>" and
// reports each line it received, and each connection's end.
type server struct {
	ln    net.Listener
	lines chan string
	ended chan struct{}
}

func startServer(t *testing.T) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{ln: ln, lines: make(chan string, 16), ended: make(chan struct{}, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						s.ended <- struct{}{}
						return
					}
					s.lines <- strings.TrimSpace(line)
					io.WriteString(c, "ok "+line)
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

func dial(t *testing.T, p *Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	return c, bufio.NewReader(c)
}

// ask sends a line and returns the reply, or the error reading it.
func ask(c net.Conn, r *bufio.Reader, line string) (string, error) {
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	reply, err := r.ReadString('\n')
	return strings.TrimSpace(reply), err
}

func recv[T any](t *testing.T, ch chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("no %s within 5s", what)
		panic("unreachable")
	}
}

func none[T any](t *testing.T, ch chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("unexpected %s: %v", what, v)
	case <-time.After(100 * time.Millisecond):
	}
}

func start(t *testing.T, s *server) *Proxy {
	t.Helper()
	p, err := Start("w1", s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func TestForwards(t *testing.T) {
	s := startServer(t)
	p := start(t, s)
	c, r := dial(t, p)
	for _, line := range []string{"a", "b"} {
		if got, err := ask(c, r, line); err != nil || got != "ok "+line {
			t.Fatalf("ask %s: %q, %v", line, got, err)
		}
		recv(t, s.lines, "line at the server")
	}
}

// TestUpstreamCut: the request never reaches the server, whose connection
// ends, and the client's connection closes.
func TestUpstreamCut(t *testing.T) {
	s := startServer(t)
	p := start(t, s)
	c, r := dial(t, p)
	if _, err := ask(c, r, "before"); err != nil {
		t.Fatal(err)
	}
	recv(t, s.lines, "line at the server")
	undo, err := p.Cut(Upstream)
	if err != nil {
		t.Fatal(err)
	}
	defer undo()
	if got, err := ask(c, r, "lost"); err == nil {
		t.Fatalf("a reply %q through a cut upstream", got)
	}
	recv(t, s.ended, "end of the server's connection")
	none(t, s.lines, "line at the server")
}

// TestDownstreamCut: the request reaches the server, its reply is lost and
// both connections close.
func TestDownstreamCut(t *testing.T) {
	s := startServer(t)
	p := start(t, s)
	c, r := dial(t, p)
	undo, err := p.Cut(Downstream)
	if err != nil {
		t.Fatal(err)
	}
	defer undo()
	if got, err := ask(c, r, "ran"); err == nil {
		t.Fatalf("a reply %q through a cut downstream", got)
	}
	if got := recv(t, s.lines, "line at the server"); got != "ran" {
		t.Fatalf("server got %q", got)
	}
	recv(t, s.ended, "end of the server's connection")
}

// TestCutHoldsUntilUndo: a connection opened while the cut holds is cut
// too; one the cut never touched, and every one after undo, work.
func TestCutHoldsUntilUndo(t *testing.T) {
	s := startServer(t)
	p := start(t, s)
	idle, idleR := dial(t, p)
	undo, err := p.Cut(Upstream)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Cut(Upstream); err == nil {
		t.Fatal("a second cut of the same direction: want an error")
	}
	c, r := dial(t, p)
	if _, err := ask(c, r, "lost"); err == nil {
		t.Fatal("a connection opened under the cut got a reply")
	}
	undo()
	undo() // idempotent
	if got, err := ask(idle, idleR, "idle"); err != nil || got != "ok idle" {
		t.Fatalf("the connection the cut never touched: %q, %v", got, err)
	}
	c2, r2 := dial(t, p)
	if got, err := ask(c2, r2, "after"); err != nil || got != "ok after" {
		t.Fatalf("after undo: %q, %v", got, err)
	}
}

// TestClose: nothing listens and every connection is closed once Close
// returns.
func TestClose(t *testing.T) {
	s := startServer(t)
	p := start(t, s)
	c, r := dial(t, p)
	if _, err := ask(c, r, "a"); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if _, err := r.ReadString('\n'); !errors.Is(err, io.EOF) {
		t.Fatalf("read after Close: %v, want EOF", err)
	}
	recv(t, s.ended, "end of the server's connection")
	if c, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatal("the proxy still listens after Close")
	}
	if _, err := p.Cut(Downstream); err == nil {
		t.Fatal("Cut after Close: want an error")
	}
}

// TestUnreachableUpstream: a client whose upstream refuses is closed, and
// the proxy goes on.
func TestUnreachableUpstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p, err := Start("w1", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, r := dial(t, p)
	if _, err := ask(c, r, "x"); err == nil {
		t.Fatal("a reply from an upstream that does not exist")
	}
}

// BenchmarkStart is what a worker's proxy costs a harness: starting it,
// one connection through it to the upstream, and closing it.
func BenchmarkStart(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	buf := make([]byte, 1)
	for b.Loop() {
		p, err := Start("w1", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
		c.Close()
		p.Close()
	}
}
