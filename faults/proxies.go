package faults

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/rs/zerolog"
)

// proxies is a toxiproxy running in this process, with one proxy a name,
// each listening on a loopback port of its own and forwarding to the
// server. Nothing listens once Close returns, and nothing outlives the
// process.
type proxies struct {
	api        *toxiproxy.ApiServer
	connString string // the server's
	upstream   string // the server's host:port
	mu         sync.Mutex
	byName     map[string]*toxiproxy.Proxy
}

func newProxies(connString string) (*proxies, error) {
	upstream, err := tcpAddress(connString)
	if err != nil {
		return nil, err
	}
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	return &proxies{api: api, connString: connString, upstream: upstream, byName: map[string]*toxiproxy.Proxy{}}, nil
}

// get returns name's proxy, starting it on first use.
func (ps *proxies) get(name string) (*toxiproxy.Proxy, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p := ps.byName[name]; p != nil {
		return p, nil
	}
	p := toxiproxy.NewProxy(ps.api, name, "127.0.0.1:0", ps.upstream)
	if err := ps.api.Collection.Add(p, true); err != nil {
		return nil, fmt.Errorf("start proxy for %s: %w", name, err)
	}
	ps.byName[name] = p
	return p, nil
}

// connString is the server's connection string pointed at name's proxy.
func (ps *proxies) connStringFor(name string) (string, error) {
	p, err := ps.get(name)
	if err != nil {
		return "", err
	}
	p.Lock()
	listen := p.Listen
	p.Unlock()
	return withAddress(ps.connString, listen)
}

// close stops every proxy and closes the connections through them.
func (ps *proxies) close() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.api.Collection.Clear()
	ps.byName = map[string]*toxiproxy.Proxy{}
}

// addToxic adds a toxic to a proxy; the undo removes it.
func addToxic(p *toxiproxy.Proxy, json string) (undo func(), err error) {
	t, err := p.Toxics.AddToxicJson(strings.NewReader(json))
	if err != nil {
		return nothing, fmt.Errorf("add toxic to proxy %s: %w", p.Name, err)
	}
	name := t.Name
	return once(func() { p.Toxics.RemoveToxic(context.Background(), name) }), nil
}

// tcpAddress is the host:port a connection string reaches. A proxy can
// only stand in front of a TCP server.
func tcpAddress(connString string) (string, error) {
	cfg, err := pgconn.ParseConfig(connString)
	if err != nil {
		return "", fmt.Errorf("parse connection string: %w", err)
	}
	if strings.HasPrefix(cfg.Host, "/") {
		return "", fmt.Errorf("network faults need a TCP server; this one is reached over the Unix socket %s", cfg.Host)
	}
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), nil
}

// withAddress points a connection string (URL or key=value form, possibly
// empty when the PG* variables configure the server) at addr.
func withAddress(connString, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(connString, "postgres://") || strings.HasPrefix(connString, "postgresql://") {
		u, err := url.Parse(connString)
		if err != nil {
			return "", fmt.Errorf("parse connection string: %w", err)
		}
		u.Host = addr
		q := u.Query()
		q.Del("host")
		q.Del("port")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	// In the key=value form the last setting of a key wins.
	return strings.TrimSpace(connString + " host=" + host + " port=" + port), nil
}
