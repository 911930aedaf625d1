package faults

import (
	"bytes"
	"context"
	"encoding/json"
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

// localProxies is a toxiproxy running in this process, with one proxy a
// name, each listening on a loopback port of its own and forwarding to the
// server. Nothing listens once Close returns, and nothing outlives the
// process.
type localProxies struct {
	api        *toxiproxy.ApiServer
	connString string // the server's
	upstream   string // the server's host:port
	mu         sync.Mutex
	byName     map[string]*toxiproxy.Proxy
}

func newLocalProxies(connString string) (*localProxies, error) {
	upstream, err := tcpAddress(connString)
	if err != nil {
		return nil, err
	}
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	return &localProxies{api: api, connString: connString, upstream: upstream, byName: map[string]*toxiproxy.Proxy{}}, nil
}

// get returns name's proxy, starting it on first use.
func (ps *localProxies) get(name string) (link, error) {
	p, err := ps.proxy(name)
	if err != nil {
		return nil, err
	}
	return localLink{p}, nil
}

func (ps *localProxies) proxy(name string) (*toxiproxy.Proxy, error) {
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

func (ps *localProxies) connStringFor(name string) (string, error) {
	p, err := ps.proxy(name)
	if err != nil {
		return "", err
	}
	p.Lock()
	listen := p.Listen
	p.Unlock()
	return withAddress(ps.connString, listen)
}

func (ps *localProxies) close() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.api.Collection.Clear()
	ps.byName = map[string]*toxiproxy.Proxy{}
}

// localLink is a proxy of this process's toxiproxy.
type localLink struct{ p *toxiproxy.Proxy }

// addToxic adds a toxic to the proxy; the undo removes it.
func (l localLink) addToxic(t toxic) (undo func(), err error) {
	body, err := json.Marshal(t)
	if err != nil {
		return nothing, err
	}
	added, err := l.p.Toxics.AddToxicJson(bytes.NewReader(body))
	if err != nil {
		return nothing, fmt.Errorf("add toxic to proxy %s: %w", l.p.Name, err)
	}
	name := added.Name
	return once(func() { l.p.Toxics.RemoveToxic(context.Background(), name) }), nil
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
