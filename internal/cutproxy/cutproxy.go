// Package cutproxy is a TCP proxy that can lose one direction of its
// connections: the fault the suite injects between a worker and the
// database (a lost request, a lost reply after commit) or the broker (a
// lost acknowledgment). It does what a toxiproxy proxy with a
// limit_data toxic of 0 bytes does, in the process that asks for it,
// with the standard library alone: a user's test binary then links no
// toxiproxy server, and no metrics or logging library behind it.
//
// A cut direction drops the first chunk it would carry and closes both
// sides of the connection, on every connection through the proxy, those
// open when the cut was made and those opened while it holds, until its
// undo. A connection the cut never touched goes on as if nothing
// happened.
package cutproxy

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Direction is the way bytes flow through a proxy.
type Direction int

const (
	// Upstream carries the client's bytes to the server: a cut loses the
	// request, which never runs.
	Upstream Direction = iota
	// Downstream carries the server's bytes to the client: a cut loses
	// the reply of a request that ran.
	Downstream
)

func (d Direction) String() string {
	if d == Upstream {
		return "upstream"
	}
	return "downstream"
}

// dialTimeout bounds the connection to the upstream a new client waits
// for; a client whose upstream does not answer is closed.
const dialTimeout = 10 * time.Second

// Proxy listens on a loopback port of its own and forwards every
// connection to one upstream address.
type Proxy struct {
	name     string
	upstream string
	ln       net.Listener

	mu     sync.Mutex
	cut    [2]bool
	conns  map[*pair]struct{}
	closed bool
	wg     sync.WaitGroup // the accept loop and every pump
}

// Start listens on 127.0.0.1 on a free port; name only labels errors.
func Start(name, upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy %s: listen: %w", name, err)
	}
	p := &Proxy{name: name, upstream: upstream, ln: ln, conns: map[*pair]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the host:port clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut loses d on every connection from now until undo, which is safe to
// call more than once. A direction already cut is an error, as adding a
// toxic of the same name twice is for toxiproxy: two faults that both
// think they own the cut would each lift it.
func (p *Proxy) Cut(d Direction) (undo func(), err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return func() {}, fmt.Errorf("proxy %s is closed", p.name)
	}
	if p.cut[d] {
		return func() {}, fmt.Errorf("proxy %s: %s is already cut", p.name, d)
	}
	p.cut[d] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			p.cut[d] = false
			p.mu.Unlock()
		})
	}, nil
}

// Close stops listening and closes every connection; nothing of the proxy
// runs once it returns.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.ln.Close()
	for c := range p.conns {
		c.close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // a client that went away before it was accepted
		}
		p.wg.Add(1)
		go p.connect(client)
	}
}

// connect dials the upstream for a new client, as toxiproxy does on
// accept, and starts the two directions.
func (p *Proxy) connect(client net.Conn) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.upstream, dialTimeout)
	if err != nil {
		client.Close()
		return
	}
	c := &pair{client: client, server: server}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.close()
		return
	}
	p.conns[c] = struct{}{}
	p.wg.Add(2)
	p.mu.Unlock()
	go p.pump(c, Upstream, client, server)
	go p.pump(c, Downstream, server, client)
}

// pump copies src to dst until either side ends or d is cut, and then
// closes both sides: an end in one direction is the end of the
// connection, as the database and broker protocols have no half-close.
func (p *Proxy) pump(c *pair, d Direction, src, dst net.Conn) {
	defer p.wg.Done()
	defer p.forget(c)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if p.isCut(d) {
				return // the chunk is dropped
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) isCut(d Direction) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut[d]
}

func (p *Proxy) forget(c *pair) {
	c.close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// pair is one client's connection and the server connection it rides on.
type pair struct {
	once           sync.Once
	client, server net.Conn
}

func (c *pair) close() {
	c.once.Do(func() {
		c.client.Close()
		c.server.Close()
	})
}
