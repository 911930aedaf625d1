package broker

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func produce(t *testing.T, seeds []string, topic string, p Payload) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordRetries(3))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec := &kgo.Record{Topic: topic, Key: []byte(p.Event), Value: p.Encode(),
		Headers: []kgo.RecordHeader{{Key: EventIDHeader, Value: []byte(p.Event)}}}
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestEmbeddedRestartKeepsRecords: a restart on the same port keeps what
// was acknowledged; Close leaves no data directory behind.
func TestEmbeddedRestartKeepsRecords(t *testing.T) {
	t.Setenv(EnvBrokers, "") // the embedded broker, whatever the environment says
	ctx := context.Background()
	b, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dir := b.embedded.dir
	if err := b.CreateTopic(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	produce(t, b.Seeds(), "t", Payload{Event: "e1", Generation: 1, Serial: 1})
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	produce(t, b.Seeds(), "t", Payload{Event: "e1", Generation: 2, Serial: 2})
	recs, err := b.ReadTopic(ctx, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Payload.Serial != 1 || recs[1].Payload.Serial != 2 || recs[1].EventID != "e1" {
		t.Fatalf("after the restart the log holds %v, want publications 1 and 2 of e1", recs)
	}
	if recs, _ := b.ReadTopic(ctx, "t", 1); len(recs) != 1 || recs[0].Offset != 1 {
		t.Errorf("read from offset 1: %v", recs)
	}
	b.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("data directory %s outlived Close (%v)", dir, err)
	}
}

// TestExternalBroker: with OUTBOXLAB_KAFKA_BROKERS set (here a kfake of
// the test's own, standing in for a Kafka), that broker is used, never
// restarted, and the topics and groups made on it are deleted at Close.
func TestExternalBroker(t *testing.T) {
	other, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	t.Setenv(EnvBrokers, " "+other.ListenAddrs()[0]+", ")
	ctx := context.Background()
	b, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b.Embedded() || b.Restart() == nil || b.Describe() != "Kafka at "+other.ListenAddrs()[0] {
		t.Errorf("an external broker: embedded %v, describe %q", b.Embedded(), b.Describe())
	}
	if err := b.CreateTopic(ctx, "outboxlab_x.relay"); err != nil {
		t.Fatal(err)
	}
	b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(other.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has("outboxlab_x.relay") {
		t.Errorf("the run's topic outlived Close: %v", topics.Names())
	}
}

func TestExternalBrokerUnreachable(t *testing.T) {
	t.Setenv(EnvBrokers, "127.0.0.1:1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if b, err := Start(ctx); err == nil {
		b.Close()
		t.Fatal("a broker nobody listens for was reached")
	}
}
