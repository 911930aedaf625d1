package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// End is the end offset of topic's partition 0, over the checker's own
// connection.
func (b *Broker) End(ctx context.Context, topic string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return EndOffset(ctx, b.admin, topic)
}

// ReadTopic reads partition 0 of topic from offset from to its end (the
// high watermark when the read starts), over the checker's own
// connection, which no fault touches.
func (b *Broker) ReadTopic(ctx context.Context, topic string, from int64) ([]Record, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	end, err := EndOffset(ctx, b.admin, topic)
	if err != nil {
		return nil, err
	}
	if end <= from {
		return nil, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []Record
	for next := from; next < end; {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read topic %s: %d of %d records before the deadline", topic, len(out), end-from)
		}
		var ferr error
		fetches.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return nil, fmt.Errorf("read topic %s: %w", topic, ferr)
		}
		for _, r := range fetches.Records() {
			rec, err := decode(r)
			if err != nil {
				return nil, err
			}
			out = append(out, rec)
			next = r.Offset + 1
		}
	}
	return out, nil
}

// EndOffset is the high watermark of partition 0: the offset the next
// record will get.
func EndOffset(ctx context.Context, cl *kgo.Client, topic string) (int64, error) {
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("end offset of %s: %w", topic, err)
	}
	o, ok := ends.Lookup(topic, 0)
	if !ok {
		return 0, fmt.Errorf("end offset of %s: partition 0 missing", topic)
	}
	if o.Err != nil {
		return 0, fmt.Errorf("end offset of %s: %w", topic, o.Err)
	}
	return o.Offset, nil
}

// decode reads a kgo record into a Record.
func decode(r *kgo.Record) (Record, error) {
	p, err := DecodePayload(r.Value)
	if err != nil {
		return Record{}, fmt.Errorf("offset %d: %w", r.Offset, err)
	}
	rec := Record{Offset: r.Offset, Key: string(r.Key), Payload: p}
	for _, h := range r.Headers {
		if h.Key == EventIDHeader {
			rec.EventID = string(h.Value)
		}
	}
	return rec, nil
}

// Decode reads a consumed record (for the consumer process).
func Decode(r *kgo.Record) (Record, error) { return decode(r) }
