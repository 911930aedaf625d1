package relayops

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/broker/payload"
	"github.com/outboxlab/outboxlab/worker"
	"github.com/twmb/franz-go/pkg/kgo"
)

// publishTimeout bounds one publish: past it the relay gives the record
// up as unacknowledged (a lost ack lasts until the harness removes it).
const publishTimeout = 400 * time.Millisecond

// producer is this process's broker client, kept across publishes as a
// relay keeps its producer (a lost ack then cuts a warm connection, after
// the request went out). A failed publish closes it: nothing it buffered
// may be sent later behind the harness's back.
var producer struct {
	cl  *kgo.Client
	key string
}

func producerFor(r *worker.RelayRequest) (*kgo.Client, error) {
	if producer.cl != nil && producer.key == clientKey(r) {
		return producer.cl, nil
	}
	closeProducer()
	opts := []kgo.Opt{kgo.SeedBrokers(r.Brokers...),
		// A plain at-least-once producer: idempotence could not span the
		// processes of a relay anyway, and a record is sent once per call.
		kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0), kgo.RecordDeliveryTimeout(time.Second), kgo.RecordRetries(2)}
	if r.Via != "" {
		opts = append(opts, kgo.Dialer(dialerVia(r.Via)))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	producer.cl, producer.key = cl, clientKey(r)
	return cl, nil
}

func closeProducer() {
	if producer.cl != nil {
		producer.cl.Close()
		producer.cl = nil
	}
}

// publish sends one record and waits for the broker's acknowledgment.
func publish(ctx context.Context, _ *pgx.Conn, req worker.Request) worker.Response {
	r := req.Relay
	if r == nil || r.Topic == "" {
		return worker.Response{Err: "publish: no topic"}
	}
	cl, err := producerFor(r)
	if err != nil {
		return worker.Response{Err: fmt.Sprintf("publish: broker client: %v", err)}
	}
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	rec := &kgo.Record{Topic: r.Topic, Key: []byte(r.Key), Value: r.Payload.Encode(),
		Headers: []kgo.RecordHeader{{Key: payload.EventIDHeader, Value: []byte(r.EventID)}}}
	done := make(chan kgo.ProduceResults, 1)
	go func() { done <- cl.ProduceSync(ctx, rec) }()
	var res kgo.ProduceResults
	select {
	case res = <-done:
	case <-ctx.Done():
		// The client keeps reconnecting past a record's context while a
		// lost ack holds: closing it fails the record at once, before the
		// harness lifts the fault, so that it cannot land later unseen.
		closeProducer()
		res = <-done
	}
	if err := res.FirstErr(); err != nil {
		closeProducer()
		return worker.Response{Relay: &worker.RelayReply{Err: fmt.Sprintf("no acknowledgment: %v", err)}}
	}
	return worker.Response{Relay: &worker.RelayReply{Offset: res[0].Record.Offset}}
}
