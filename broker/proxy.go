package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// AckProxies puts an in-process toxiproxy proxy between each worker and
// the broker, so that one worker's acknowledgments can be lost while its
// requests still arrive. The worker's client sends every connection to
// its proxy (a one-node cluster advertises one address).
type AckProxies struct {
	api      *toxiproxy.ApiServer
	upstream string
	mu       sync.Mutex
	byName   map[string]*toxiproxy.Proxy
}

// NewAckProxies prepares proxies toward the broker's first seed.
func (b *Broker) NewAckProxies() *AckProxies {
	return &AckProxies{api: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		upstream: b.seeds[0], byName: map[string]*toxiproxy.Proxy{}}
}

// Addr is where name's client connects: its proxy, started on first use.
func (ps *AckProxies) Addr(name string) (string, error) {
	p, err := ps.proxy(name)
	if err != nil {
		return "", err
	}
	p.Lock()
	defer p.Unlock()
	return p.Listen, nil
}

func (ps *AckProxies) proxy(name string) (*toxiproxy.Proxy, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p := ps.byName[name]; p != nil {
		return p, nil
	}
	p := toxiproxy.NewProxy(ps.api, "kafka-"+name, "127.0.0.1:0", ps.upstream)
	if err := ps.api.Collection.Add(p, true); err != nil {
		return nil, fmt.Errorf("start broker proxy for %s: %w", name, err)
	}
	ps.byName[name] = p
	return p, nil
}

// LoseAcks cuts name's broker-to-client direction: its next produce
// request reaches the broker and is appended, and the acknowledgment is
// dropped as the connection closes (so is every reply after it, until
// undo).
func (ps *AckProxies) LoseAcks(name string) (undo func(), err error) {
	p, err := ps.proxy(name)
	if err != nil {
		return func() {}, err
	}
	body, _ := json.Marshal(map[string]any{"name": "ack_lost", "type": "limit_data", "stream": "downstream",
		"toxicity": 1, "attributes": map[string]any{"bytes": 0}})
	added, err := p.Toxics.AddToxicJson(bytes.NewReader(body))
	if err != nil {
		return func() {}, fmt.Errorf("add toxic to broker proxy %s: %w", name, err)
	}
	var once sync.Once
	return func() { once.Do(func() { p.Toxics.RemoveToxic(context.Background(), added.Name) }) }, nil
}

// Close stops every proxy and the connections through them.
func (ps *AckProxies) Close() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.api.Collection.Clear()
	ps.byName = map[string]*toxiproxy.Proxy{}
}
