package worker

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/broker/payload"
)

// The relay ops (publish, consume) make a worker process a relay's
// publisher or the downstream consumer: the broker client lives in the
// process that is killed or paused, never in the harness. They are in
// package worker/relayops, which registers them when imported (package
// relay does), so that a binary that runs no relay links no Kafka client.

// RelayOp runs one relay op in the worker process, on the worker's
// database connection.
type RelayOp func(ctx context.Context, conn *pgx.Conn, req Request) Response

var relayOps = map[string]RelayOp{}

// RegisterRelayOp makes op the worker's answer to requests named name.
// Call it from an init function: the table is read without a lock.
func RegisterRelayOp(name string, op RelayOp) { relayOps[name] = op }

// relayOp runs a registered relay op; ok is false for a name that is no
// relay op.
func (a *agent) relayOp(ctx context.Context, req Request) (resp Response, ok bool) {
	if op := relayOps[req.Op]; op != nil {
		return op(ctx, a.conn, req), true
	}
	if req.Op == OpPublish || req.Op == OpConsume {
		return Response{Err: fmt.Sprintf("relay op %s: not linked into this binary (import github.com/outboxlab/outboxlab/worker/relayops)", req.Op)}, true
	}
	return Response{}, false
}

// Relay op names.
const (
	OpPublish = "publish"
	OpConsume = "consume"
)

// RelayRequest is what a publish or consume needs beyond the database.
type RelayRequest struct {
	Brokers []string `json:"brokers"`
	// Via, when set, is where every broker connection is dialled: this
	// worker's proxy in front of a one-node cluster (the acks it loses).
	Via   string `json:"via,omitempty"`
	Topic string `json:"topic"`

	// Publish: the record.
	Key     string          `json:"key,omitempty"`
	EventID string          `json:"event_id,omitempty"`
	Payload payload.Payload `json:"payload,omitzero"`

	// Consume: the consumer group whose committed offset it resumes
	// from, and how it behaves.
	Group string `json:"group,omitempty"`
	// From is where a group with no committed offset starts.
	From     int64           `json:"from,omitempty"`
	Consumer ConsumerOptions `json:"consumer,omitzero"`
}

// ConsumerOptions are the consumer's behaviour: the correct one is the
// zero value; the others are variants the checker must catch.
type ConsumerOptions struct {
	// DedupByGeneration deduplicates by event id and generation, so a
	// republication by a later claim is applied again.
	DedupByGeneration bool `json:"dedup_by_generation,omitempty"`
	// CommitBeforeApply commits a record's offset before applying it, so
	// a crash between the two loses the record.
	CommitBeforeApply bool `json:"commit_before_apply,omitempty"`
	// CrashAfterFirstStep makes the process SIGKILL itself after the first
	// of the two steps (apply, offset commit) of the first record: a
	// crash at an exact point, for the checker's consumer_crash step.
	CrashAfterFirstStep bool `json:"crash_after_first_step,omitempty"`
}

// RelayReply is a publish's or a consume's answer.
type RelayReply struct {
	// Err is a publish with no acknowledgment (the record may or may not
	// be in the log) or a consume that stopped early.
	Err string `json:"err,omitempty"`
	// Offset is an acknowledged publish's record offset.
	Offset int64 `json:"offset,omitempty"`
	// Consumed lists what a consume read, in offset order.
	Consumed []Consumed `json:"consumed,omitempty"`
}

// Consumed is one record a consume read and what it did with it.
type Consumed struct {
	Offset  int64  `json:"offset"`
	EventID string `json:"event_id"`
	Serial  int    `json:"serial"`
	// Applied is false when the dedup table already had the record's key.
	Applied bool `json:"applied"`
}
