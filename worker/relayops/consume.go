package relayops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/broker"
	"github.com/outboxlab/outboxlab/worker"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ConsumerTables is the consumer's side of the database, created by the
// harness in the run's schema: the dedup table (one row per key ever
// applied) and the effects the consumer produced (one row per application,
// which the checker counts).
const ConsumerTables = `
CREATE TABLE IF NOT EXISTS relay_seen (dedup_key text PRIMARY KEY);
CREATE TABLE IF NOT EXISTS relay_effects (
    event text NOT NULL,
    event_id text NOT NULL,
    generation bigint NOT NULL,
    serial int NOT NULL,
    record_offset bigint NOT NULL
);`

// consume reads the topic from the group's committed offset to the end
// offset it finds on starting, and for each record applies it to the
// database (deduplicated in the same transaction) and then commits its
// offset, as a consumer that resumes where its group left off.
func consume(ctx context.Context, conn *pgx.Conn, req worker.Request) worker.Response {
	r := req.Relay
	if r == nil || r.Topic == "" || r.Group == "" {
		return worker.Response{Err: "consume: no topic or group"}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.Brokers...), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return worker.Response{Relay: &worker.RelayReply{Err: fmt.Sprintf("broker client: %v", err)}}
	}
	defer cl.Close()
	c := consumer{ctx: ctx, conn: conn, r: r, adm: kadm.NewClient(cl)}
	start, end, err := c.bounds(cl)
	if err != nil {
		return worker.Response{Relay: &worker.RelayReply{Err: err.Error()}}
	}
	if start >= end {
		return worker.Response{Relay: &worker.RelayReply{}}
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{r.Topic: {0: kgo.NewOffset().At(start)}})
	reply := &worker.RelayReply{}
	for next := start; next < end; {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			reply.Err = fmt.Sprintf("consume: stopped at offset %d of %d: %v", next, end, ctx.Err())
			return worker.Response{Relay: reply}
		}
		for _, rec := range fetches.Records() {
			got, err := c.process(rec, len(reply.Consumed) == 0)
			if err != nil {
				reply.Err = err.Error()
				return worker.Response{Relay: reply}
			}
			reply.Consumed = append(reply.Consumed, got)
			next = rec.Offset + 1
		}
	}
	return worker.Response{Relay: reply}
}

type consumer struct {
	ctx  context.Context
	conn *pgx.Conn
	r    *worker.RelayRequest
	adm  *kadm.Client
}

// bounds are the committed offset (From when the group has none) and the end.
func (c consumer) bounds(cl *kgo.Client) (start, end int64, err error) {
	offs, err := c.adm.FetchOffsets(c.ctx, c.r.Group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		err = nil // nothing committed yet: from the start
	}
	if err != nil {
		return 0, 0, fmt.Errorf("fetch committed offset: %w", err)
	}
	start = c.r.From
	if o, ok := offs.Lookup(c.r.Topic, 0); ok && o.Err == nil && o.At >= 0 {
		start = o.At
	}
	end, err = broker.EndOffset(c.ctx, cl, c.r.Topic)
	return start, end, err
}

// process applies one record and commits its offset, in the order the
// options say, crashing after the first step when asked to.
func (c consumer) process(rec *kgo.Record, first bool) (worker.Consumed, error) {
	r, err := broker.Decode(rec)
	if err != nil {
		return worker.Consumed{}, err
	}
	got := worker.Consumed{Offset: r.Offset, EventID: r.EventID, Serial: r.Payload.Serial}
	apply := func() (err error) { got.Applied, err = c.apply(r); return err }
	steps := []func() error{apply, func() error { return c.commit(r.Offset + 1) }}
	if c.r.Consumer.CommitBeforeApply {
		steps[0], steps[1] = steps[1], steps[0]
	}
	for i, step := range steps {
		if err := step(); err != nil {
			return got, err
		}
		if i == 0 && first && c.r.Consumer.CrashAfterFirstStep {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
	return got, nil
}

// apply records the record's effect unless its dedup key was seen, in one
// transaction: the dedup row and the effect commit together or not at all.
func (c consumer) apply(r broker.Record) (applied bool, err error) {
	key := r.EventID
	if c.r.Consumer.DedupByGeneration {
		key = fmt.Sprintf("%s/%d", r.EventID, r.Payload.Generation)
	}
	err = pgx.BeginFunc(c.ctx, c.conn, func(tx pgx.Tx) error {
		tag, err := tx.Exec(c.ctx, "INSERT INTO relay_seen (dedup_key) VALUES ($1) ON CONFLICT DO NOTHING", key)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		applied = true
		_, err = tx.Exec(c.ctx, `INSERT INTO relay_effects (event, event_id, generation, serial, record_offset)
			VALUES ($1, $2, $3, $4, $5)`, r.Payload.Event, r.EventID, r.Payload.Generation, r.Payload.Serial, r.Offset)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("apply offset %d: %w", r.Offset, err)
	}
	return applied, nil
}

func (c consumer) commit(next int64) error {
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: c.r.Topic, Partition: 0, At: next, LeaderEpoch: -1})
	resp, err := c.adm.CommitOffsets(c.ctx, c.r.Group, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("commit offset %d: %w", next, err)
	}
	return nil
}
