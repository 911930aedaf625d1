package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/jackc/pgx/v5/pgconn"
)

// externalProxies are proxies on a toxiproxy server this process does not
// run (docker-compose.yml's), made and cut through its HTTP API. Every
// name carries a run id of its own, so runs sharing the server never
// touch each other's proxies; close deletes this run's, and the next run
// on the machine those of a killed one (external_sweep.go).
type externalProxies struct {
	cfg        externalConfig
	api        *toxiclient.Client
	connString string // the server's, as this process reaches it
	prefix     string // runPrefix()
	mu         sync.Mutex
	byName     map[string]*externalLink
	err        error // the first toxic that would not go away
}

// externalLink is one proxy on the external server.
type externalLink struct {
	ps   *externalProxies
	p    *toxiclient.Proxy
	port int
}

// reachTimeout bounds the check that a new proxy leads to the server.
const reachTimeout = 10 * time.Second

func newExternalProxies(cfg externalConfig, connString string) (*externalProxies, error) {
	api := toxiclient.NewClient(cfg.url)
	api.UserAgent = "outboxlab"
	if _, err := api.Version(); err != nil {
		return nil, fmt.Errorf("the toxiproxy API at %s (%s) is unreachable: %w; start it (docker compose up -d toxiproxy) or unset %s for in-process proxies",
			cfg.url, envToxiproxyURL, err, envToxiproxyURL)
	}
	ps := &externalProxies{cfg: cfg, api: api, connString: connString, prefix: runPrefix(), byName: map[string]*externalLink{}}
	ps.sweep()
	return ps, nil
}

func (ps *externalProxies) get(name string) (link, error) {
	l, err := ps.link(name)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// link returns name's proxy, creating it on first use on the first free
// port of the range, once a connection through it has reached the server.
func (ps *externalProxies) link(name string) (*externalLink, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.err != nil {
		return nil, ps.err
	}
	if l := ps.byName[name]; l != nil {
		return l, nil
	}
	l, err := ps.create(name)
	if err != nil {
		return nil, err
	}
	if err := ps.reaches(l); err != nil {
		l.p.Delete()
		return nil, err
	}
	ps.byName[name] = l
	return l, nil
}

func (ps *externalProxies) connStringFor(name string) (string, error) {
	l, err := ps.link(name)
	if err != nil {
		return "", err
	}
	return withAddress(ps.connString, ps.address(l))
}

// close deletes this run's proxies; the server closes their connections.
func (ps *externalProxies) close() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, l := range ps.byName {
		l.p.Delete()
	}
	ps.byName = map[string]*externalLink{}
}

// create tries the range's ports in order. A port taken by another run's
// proxy (or anything else listening there) fails to bind; the next is tried.
func (ps *externalProxies) create(name string) (*externalLink, error) {
	full := ps.prefix + name
	for port := ps.cfg.first; port <= ps.cfg.last; port++ {
		if ps.holds(port) {
			continue
		}
		listen := net.JoinHostPort("0.0.0.0", strconv.Itoa(port))
		p, err := ps.api.CreateProxy(full, listen, ps.cfg.upstream)
		if err == nil {
			return &externalLink{ps: ps, p: p, port: port}, nil
		}
		if !portTaken(err) {
			return nil, fmt.Errorf("create proxy %s on the toxiproxy server at %s: %w", full, ps.cfg.url, err)
		}
	}
	return nil, ps.exhausted(name)
}

func (ps *externalProxies) holds(port int) bool {
	for _, l := range ps.byName {
		if l.port == port {
			return true
		}
	}
	return false
}

// portTaken: the server could not listen on the port it was given.
func portTaken(err error) bool {
	var apiErr *toxiclient.ApiError
	return errors.As(err, &apiErr) && apiErr.Status == http.StatusInternalServerError &&
		strings.Contains(apiErr.Message, "address already in use")
}

// exhausted says which proxies hold the range, and how to free it.
func (ps *externalProxies) exhausted(name string) error {
	var holders []string
	if all, err := ps.api.Proxies(); err == nil {
		for _, p := range all {
			if port := portOf(p.Listen); port >= ps.cfg.first && port <= ps.cfg.last {
				holders = append(holders, p.Name)
			}
		}
	}
	slices.Sort(holders)
	held := "something else listens there"
	if len(holders) > 0 {
		held = "held by " + strings.Join(holders, ", ")
	}
	return fmt.Errorf("no free port for %s's proxy: %s=%s on the toxiproxy server at %s are all taken (%s); delete proxies no run uses (curl -X DELETE %s/proxies/NAME) or widen the range",
		name, envToxiproxyPorts, ps.cfg.ports(), ps.cfg.url, held, ps.cfg.url)
}

// portOf is the port of a listen address, 0 if it has none.
func portOf(listen string) int {
	_, port, _ := net.SplitHostPort(listen)
	n, _ := strconv.Atoi(port)
	return n
}

// address is where a worker finds l: the toxiproxy server's host, as this
// machine reaches it, and l's port.
func (ps *externalProxies) address(l *externalLink) string {
	return net.JoinHostPort(ps.cfg.host, strconv.Itoa(l.port))
}

// reaches connects to the server through l. A wrong upstream or host
// would otherwise show up only as every worker's connection failing.
func (ps *externalProxies) reaches(l *externalLink) error {
	cs, err := withAddress(ps.connString, ps.address(l))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), reachTimeout)
	defer cancel()
	conn, err := pgconn.Connect(ctx, cs)
	if err != nil {
		return fmt.Errorf("proxy %s (%s, forwarding to %s) does not reach the server: %w; %s is the database as the toxiproxy server reaches it, %s the toxiproxy server as this machine reaches it",
			l.p.Name, ps.address(l), ps.cfg.upstream, err, envToxiproxyUpstream, envToxiproxyHost)
	}
	conn.Close(ctx)
	return nil
}

// addToxic adds a toxic through the API; the undo removes it. A toxic
// that would not go away would cut every later connection of the worker,
// so the next fault asked of this server reports it instead.
func (l *externalLink) addToxic(t toxic) (undo func(), err error) {
	added, err := l.p.AddToxic(t.Name, t.Type, t.Stream, t.Toxicity, toxiclient.Attributes(t.Attributes))
	if err != nil {
		return nothing, fmt.Errorf("add toxic to proxy %s: %w", l.p.Name, err)
	}
	name := added.Name
	return once(func() {
		if err := l.p.RemoveToxic(name); err != nil {
			l.ps.failed(fmt.Errorf("remove toxic %s from proxy %s: %w", name, l.p.Name, err))
		}
	}), nil
}

func (ps *externalProxies) failed(err error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.err == nil {
		ps.err = err
	}
}
