// Package broker is the Kafka-protocol broker of relay mode: by default an
// in-process franz-go kfake cluster of one node that workers and the
// consumer reach over TCP, or, with OUTBOXLAB_KAFKA_BROKERS set, that Kafka.
// It also reads a topic back whole, for the checker, and owns the
// per-worker proxies that lose acknowledgments.
package broker

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// EnvBrokers names a Kafka to use instead of the embedded broker: a
// comma-separated list of host:port seeds.
const EnvBrokers = "OUTBOXLAB_KAFKA_BROKERS"

// Broker is a running Kafka-protocol broker and the topics this run made
// on it (removed by Close).
type Broker struct {
	seeds    []string
	embedded *embedded // nil for an external Kafka
	admin    *kgo.Client
	topics   []string
	groups   []string
}

// Start brings up the broker: the one OUTBOXLAB_KAFKA_BROKERS names, else
// an embedded one. Close must be called; nothing of an embedded broker
// outlives the process even when it is killed (see embedded.go).
func Start(ctx context.Context) (*Broker, error) {
	b := &Broker{}
	if env := strings.TrimSpace(os.Getenv(EnvBrokers)); env != "" {
		for _, s := range strings.Split(env, ",") {
			if s = strings.TrimSpace(s); s != "" {
				b.seeds = append(b.seeds, s)
			}
		}
	} else {
		e, err := startEmbedded()
		if err != nil {
			return nil, fmt.Errorf("embedded broker: %w", err)
		}
		b.embedded, b.seeds = e, []string{e.addr}
	}
	admin, err := kgo.NewClient(kgo.SeedBrokers(b.seeds...), kgo.RequestRetries(3))
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("broker client: %w", err)
	}
	b.admin = admin
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := admin.Ping(ctx); err != nil {
		b.Close()
		return nil, fmt.Errorf("reach the broker at %s: %w", strings.Join(b.seeds, ","), err)
	}
	return b, nil
}

// Seeds are the addresses clients start from.
func (b *Broker) Seeds() []string { return b.seeds }

// Embedded reports whether this is the in-process broker (which can be
// restarted); an external Kafka is left alone.
func (b *Broker) Embedded() bool { return b.embedded != nil }

// Describe says which broker this is, for a result's header.
func (b *Broker) Describe() string {
	if b.embedded != nil {
		return "embedded kfake"
	}
	return "Kafka at " + strings.Join(b.seeds, ",")
}

// CreateTopic makes a topic of one partition (a total order of the
// records, which the checker reads back) and remembers it for Close.
func (b *Broker) CreateTopic(ctx context.Context, topic string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(b.admin).CreateTopic(ctx, 1, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	b.topics = append(b.topics, topic)
	return nil
}

// UseGroup remembers a consumer group this run commits offsets for, so
// that Close removes it from an external Kafka.
func (b *Broker) UseGroup(group string) { b.groups = append(b.groups, group) }

// DeleteTopics removes the topics and consumer groups this run made.
func (b *Broker) DeleteTopics(ctx context.Context) {
	if b.admin == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	adm := kadm.NewClient(b.admin)
	if len(b.groups) > 0 {
		adm.DeleteGroups(ctx, b.groups...)
	}
	if len(b.topics) > 0 {
		adm.DeleteTopics(ctx, b.topics...)
	}
	b.topics, b.groups = nil, nil
}

// Restart stops the embedded broker and starts it again on the same port
// from its data directory: acknowledged records and committed offsets
// survive, every connection breaks and the clients reconnect.
func (b *Broker) Restart() error {
	if b.embedded == nil {
		return fmt.Errorf("an external Kafka is not restarted by outboxlab")
	}
	return b.embedded.restart()
}

// Close deletes this run's topics and stops an embedded broker, removing
// its data.
func (b *Broker) Close() {
	if b.embedded == nil {
		b.DeleteTopics(context.Background())
	}
	if b.admin != nil {
		b.admin.Close()
		b.admin = nil
	}
	if b.embedded != nil {
		b.embedded.close()
		b.embedded = nil
	}
}
