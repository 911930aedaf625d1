package faults

import "os"

// link is one worker's path to the server through a toxiproxy proxy: a
// toxic added to it cuts that worker's connection and no one else's.
type link interface {
	addToxic(t toxic) (undo func(), err error)
}

// proxySet hands out one link a worker name, made on first use, wherever
// the toxiproxy runs: in this process (localProxies) or on a server
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
