package faults

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/outboxlab/outboxlab/internal/cutproxy"
)

// localProxies are proxies in this process (internal/cutproxy), one a
// name, each listening on a loopback port of its own and forwarding to
// the server. Nothing listens once close returns, and nothing outlives
// the process.
type localProxies struct {
	set        *cutproxy.Set
	connString string // the server's
}

func newLocalProxies(connString string) (*localProxies, error) {
	upstream, err := tcpAddress(connString)
	if err != nil {
		return nil, err
	}
	return &localProxies{set: cutproxy.NewSet(upstream), connString: connString}, nil
}

// get returns name's proxy, starting it on first use.
func (ps *localProxies) get(name string) (link, error) {
	p, err := ps.set.Get(name)
	if err != nil {
		return nil, fmt.Errorf("start proxy for %s: %w", name, err)
	}
	return localLink{p}, nil
}

func (ps *localProxies) connStringFor(name string) (string, error) {
	p, err := ps.set.Get(name)
	if err != nil {
		return "", fmt.Errorf("start proxy for %s: %w", name, err)
	}
	return withAddress(ps.connString, p.Addr())
}

func (ps *localProxies) close() { ps.set.Close() }

// localLink is a proxy of this process.
type localLink struct{ p *cutproxy.Proxy }

// addToxic cuts the toxic's stream, the one kind of toxic the faults use
// (cut: limit_data of 0 bytes); the undo lifts it.
func (l localLink) addToxic(t toxic) (undo func(), err error) {
	d, err := t.direction()
	if err != nil {
		return nothing, err
	}
	return l.p.Cut(d)
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
