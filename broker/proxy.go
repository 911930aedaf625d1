package broker

import (
	"fmt"

	"github.com/outboxlab/outboxlab/internal/cutproxy"
)

// AckProxies puts an in-process proxy (internal/cutproxy) between each
// worker and the broker, so that one worker's acknowledgments can be lost
// while its requests still arrive. The worker's client sends every
// connection to its proxy (a one-node cluster advertises one address).
type AckProxies struct{ set *cutproxy.Set }

// NewAckProxies prepares proxies toward the broker's first seed.
func (b *Broker) NewAckProxies() *AckProxies {
	return &AckProxies{set: cutproxy.NewSet(b.seeds[0])}
}

// Addr is where name's client connects: its proxy, started on first use.
func (ps *AckProxies) Addr(name string) (string, error) {
	p, err := ps.proxy(name)
	if err != nil {
		return "", err
	}
	return p.Addr(), nil
}

func (ps *AckProxies) proxy(name string) (*cutproxy.Proxy, error) {
	p, err := ps.set.Get("kafka-" + name)
	if err != nil {
		return nil, fmt.Errorf("start broker proxy for %s: %w", name, err)
	}
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
	undo, err = p.Cut(cutproxy.Downstream)
	if err != nil {
		return func() {}, fmt.Errorf("lose acks on broker proxy %s: %w", name, err)
	}
	return undo, nil
}

// Close stops every proxy and the connections through them.
func (ps *AckProxies) Close() { ps.set.Close() }
