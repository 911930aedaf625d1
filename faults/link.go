package faults

import (
	"fmt"
	"os"

	"github.com/outboxlab/outboxlab/internal/cutproxy"
)

// link is one worker's path to the server through a proxy of its own: a
// toxic added to it cuts that worker's connection and no one else's.
type link interface {
	addToxic(t toxic) (undo func(), err error)
}

// proxySet hands out one link a worker name, made on first use, wherever
// the proxy runs: in this process (localProxies) or on a toxiproxy server
// reached through its HTTP API (externalProxies).
type proxySet interface {
	get(name string) (link, error)
	// connStringFor is the server's connection string pointed at name's proxy.
	connStringFor(name string) (string, error)
	// close removes every proxy and closes the connections through them.
	close()
}

// newProxySet starts the proxies in front of the server connString
// reaches: on the toxiproxy server OUTBOXLAB_TOXIPROXY_URL names, else in
// this process.
func newProxySet(connString string) (proxySet, error) {
	cfg, ok, err := externalFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	if ok {
		return newExternalProxies(cfg, connString)
	}
	return newLocalProxies(connString)
}

// toxic is what toxiproxy's API takes to add one; its JSON is the API's.
type toxic struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float32        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

// cut closes the connection at the first byte stream would carry
// (upstream: client to server; downstream: server to client), every time.
func cut(name, stream string) toxic {
	return toxic{Name: name, Type: "limit_data", Stream: stream, Toxicity: 1, Attributes: map[string]any{"bytes": 0}}
}

// direction is the stream a cut toxic loses, for the in-process proxies,
// which know no other toxic.
func (t toxic) direction() (cutproxy.Direction, error) {
	if t.Type != "limit_data" || t.Toxicity != 1 || t.Attributes["bytes"] != 0 {
		return 0, fmt.Errorf("toxic %s: the in-process proxies only cut a stream (limit_data of 0 bytes)", t.Name)
	}
	switch t.Stream {
	case "upstream":
		return cutproxy.Upstream, nil
	case "downstream":
		return cutproxy.Downstream, nil
	}
	return 0, fmt.Errorf("toxic %s: stream %q is neither upstream nor downstream", t.Name, t.Stream)
}
