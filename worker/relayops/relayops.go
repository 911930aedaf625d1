// Package relayops is the broker side of a worker process in relay mode:
// the publish op (a relay's producer) and the consume op (the downstream
// consumer), which it registers with package worker when imported.
// Package relay imports it, so that its worker processes, which are the
// binary that runs the relay re-executed, answer both; a binary that runs
// no relay leaves it, and the Kafka client, out.
package relayops

import (
	"context"
	"net"
	"strings"

	"github.com/outboxlab/outboxlab/worker"
)

func init() {
	worker.RegisterRelayOp(worker.OpPublish, publish)
	worker.RegisterRelayOp(worker.OpConsume, consume)
}

// dialerVia sends every connection to addr, whatever broker address the
// client asked for.
func dialerVia(addr string) func(ctx context.Context, network, host string) (net.Conn, error) {
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

// clientKey identifies a broker client's configuration, to reuse it.
func clientKey(r *worker.RelayRequest) string { return strings.Join(r.Brokers, ",") + "|" + r.Via }
