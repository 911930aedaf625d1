package pgserver

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// front is a TCP forwarder in this process that every client of a topology
// connects to, so that ConnString stays the same when the primary moves (a
// failover) or comes back on another port (a crash). Moving it cuts every
// forwarded connection, as a failover does to a real server's clients; a
// connection made while the primary is down waits for the new one instead
// of reaching a dead server or a standby that refuses writes.
type front struct {
	ln     net.Listener
	mu     sync.Mutex
	target string        // the current primary's address; "" while held
	moved  chan struct{} // closed and replaced whenever target changes
	epoch  int           // raised by every hold: older connections are cut
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// frontWait bounds how long a connection made during a failover waits for
// the new primary before the front gives up on it.
const frontWait = time.Minute

func startFront(target string) (*front, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("front: listen: %w", err)
	}
	f := &front{ln: ln, target: target, moved: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.accept()
	return f, nil
}

func (f *front) connString() string {
	return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", f.ln.Addr())
}

// hold cuts every forwarded connection and makes new ones wait for point.
func (f *front) hold() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.target = ""
	f.epoch++
	f.cutLocked()
}

// point forwards new connections (and the waiting ones) to addr.
func (f *front) point(addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.target = addr
	close(f.moved)
	f.moved = make(chan struct{})
}

func (f *front) close() {
	f.mu.Lock()
	if !f.closed {
		f.closed = true
		f.ln.Close()
		close(f.moved)
		f.cutLocked()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *front) cutLocked() {
	for c := range f.conns {
		c.Close()
	}
	clear(f.conns)
}

func (f *front) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return // closed
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.serve(c)
		}()
	}
}

func (f *front) serve(client net.Conn) {
	defer client.Close()
	target, epoch, ok := f.waitTarget()
	if !ok {
		return
	}
	server, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		return // the client sees its connection closed: a failed connect
	}
	defer server.Close()
	if !f.track(epoch, client, server) {
		return // the primary moved while we dialled it
	}
	defer f.untrack(client, server)
	done := make(chan struct{}, 2)
	go func() { io.Copy(server, client); done <- struct{}{} }()
	go func() { io.Copy(client, server); done <- struct{}{} }()
	<-done
	client.Close()
	server.Close()
	<-done
}

func (f *front) waitTarget() (string, int, bool) {
	timeout := time.NewTimer(frontWait)
	defer timeout.Stop()
	for {
		f.mu.Lock()
		target, epoch, closed, moved := f.target, f.epoch, f.closed, f.moved
		f.mu.Unlock()
		switch {
		case closed:
			return "", 0, false
		case target != "":
			return target, epoch, true
		}
		select {
		case <-moved:
		case <-timeout.C:
			return "", 0, false
		}
	}
}

func (f *front) track(epoch int, conns ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || epoch != f.epoch {
		return false
	}
	for _, c := range conns {
		f.conns[c] = struct{}{}
	}
	return true
}

func (f *front) untrack(conns ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range conns {
		delete(f.conns, c)
	}
}
