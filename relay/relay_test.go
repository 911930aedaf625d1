package relay

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/broker"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
	"github.com/twmb/franz-go/pkg/kfake"
)

func TestMain(m *testing.M) {
	worker.MainIfWorker()
	os.Exit(func() int {
		defer pgserver.CloseShared()
		return m.Run()
	}())
}

// harness installs protocol on the shared server and starts a broker of
// its own; both end with the test.
func harness(t *testing.T, protocol string, opts Options) *Harness {
	t.Helper()
	srv, err := pgserver.Shared()
	if err != nil {
		t.Fatal(err)
	}
	p, err := sut.Resolve(protocol)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inst, err := sut.Install(ctx, srv.ConnString(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inst.Close)
	b, err := broker.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	h, err := New(ctx, inst, b, DefaultConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func runProgram(t *testing.T, h *Harness, p Program) Outcome {
	t.Helper()
	out, err := h.Run(p)
	if err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(out.Lines, "\n"))
	}
	return out
}

// TestArticleScenario is the test the article did not write: a worker
// killed after the acknowledgment and before its complete; the next claim
// publishes the event again under the same event id, and the consumer
// applies it once.
func TestArticleScenario(t *testing.T) {
	h := harness(t, "leased", Options{})
	out := runProgram(t, h, ArticleProgram())
	for _, v := range out.Violations {
		t.Errorf("violation: %s", v.Detail)
	}
	var gens []int64
	for _, r := range out.History.Log {
		if r.Payload.Event != "e1" || r.Key != "e1" || r.EventID != "e1" {
			t.Errorf("record %s: want e1's, keyed and identified by e1", r)
		}
		gens = append(gens, r.Payload.Generation)
	}
	if fmt.Sprint(gens) != "[1 2]" {
		t.Errorf("records of generations %v, want [1 2]: a second publication by the second claim", gens)
	}
	if n := out.History.Effects["e1"]; n != 1 {
		t.Errorf("e1 applied %d times, want once", n)
	}
	for class, want := range map[string]int{ClassKillAfterAck: 1, ClassRedelivered: 1, ClassConsumerDedup: 1} {
		if out.Coverage[class] != want {
			t.Errorf("coverage %s = %d, want %d", class, out.Coverage[class], want)
		}
	}
	if t.Failed() {
		t.Log("\n" + strings.Join(out.Lines, "\n"))
	}
}

// variantPrograms is, per variant, the fixed program that shows its flaw.
var variantPrograms = map[string]Program{
	"key_with_generation":          ArticleProgram(),
	"complete_before_publish":      KillBeforeCompleteProgram(),
	"consumer_dedup_by_generation": ArticleProgram(),
	"consumer_commit_before_apply": ConsumerCrashProgram(),
}

// TestVariantsCaught: each broken relay or consumer breaks its own rule
// on its program, which the correct pipeline passes.
func TestVariantsCaught(t *testing.T) {
	h := harness(t, "leased", Options{})
	for _, v := range Variants {
		t.Run(v.Name, func(t *testing.T) {
			p, ok := variantPrograms[v.Name]
			if !ok {
				t.Fatalf("no program for variant %s", v.Name)
			}
			h.Opts = Options{}
			if out := runProgram(t, h, p); out.Failed() {
				t.Fatalf("the correct pipeline fails the program: %v\n%s", out.Violations, strings.Join(out.Lines, "\n"))
			}
			h.Opts = v.Opts
			out := runProgram(t, h, p)
			if !out.Broke(v.Rule) {
				t.Errorf("%s not caught by %q; broke %v\n%s", v.Name, v.Rule, out.Violations, strings.Join(out.Lines, "\n"))
			}
		})
	}
}

// TestBaselineNeverDelivers: the baseline's claim never takes an expired
// lease, so an event whose worker died before publishing is never
// delivered; the leased protocol delivers it.
func TestBaselineNeverDelivers(t *testing.T) {
	if out := runProgram(t, harness(t, "leased", Options{}), StrandedProgram()); out.Failed() {
		t.Errorf("leased: %v", out.Violations)
	}
	out := runProgram(t, harness(t, "baseline", Options{}), StrandedProgram())
	if !out.Broke(RuleNoEventLost) {
		t.Errorf("baseline not caught by %q; broke %v\n%s", RuleNoEventLost, out.Violations, strings.Join(out.Lines, "\n"))
	}
}

// TestAckLostAndBrokerRestart: a record whose acknowledgment was lost is
// in the log and is published again by the next claim; a broker restart
// keeps every acknowledged record; the consumer applies each event once.
func TestAckLostAndBrokerRestart(t *testing.T) {
	h := harness(t, "leased", Options{})
	p := Program{Workers: []string{"w1", "w2"}, Events: []string{"e1", "e2"}, Steps: steps(
		next("w1"), next("w1"), next("w1"), // e1 relayed: w1's producer is warm
		next("w1"), Step{Kind: NextAckLost, Worker: "w1"}, // e2's record lands, its ack is lost
		Step{Kind: BrokerRestart}, Step{Kind: Consume},
	)}
	out := runProgram(t, h, p)
	for _, v := range out.Violations {
		t.Errorf("violation: %s", v.Detail)
	}
	restarts := 0
	if h.Broker.Embedded() {
		restarts = 1 // OUTBOXLAB_KAFKA_BROKERS: a real Kafka is not restarted
	}
	for class, want := range map[string]int{ClassAckLost: 1, ClassBrokerRestart: restarts, ClassRedelivered: 1, ClassPublished: 3} {
		if out.Coverage[class] != want {
			t.Errorf("coverage %s = %d, want %d", class, out.Coverage[class], want)
		}
	}
	if out.History.Effects["e1"] != 1 || out.History.Effects["e2"] != 1 {
		t.Errorf("effects %v, want e1 and e2 once each", out.History.Effects)
	}
	if t.Failed() {
		t.Log("\n" + strings.Join(out.Lines, "\n"))
	}
}

// TestLeasedSearchPasses: random programs with every fault hold the
// leased protocol's pipeline to every property (true on every seed).
func TestLeasedSearchPasses(t *testing.T) {
	h := harness(t, "leased", Options{})
	seed := rand.Uint64N(1 << 53)
	res, err := h.Search(seed, 6, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failure != nil {
		t.Errorf("seed %d: %v\n%s", seed, res.Failure.Violations, strings.Join(res.Failure.Lines, "\n"))
	}
	if res.Coverage[ClassPublished] == 0 {
		t.Errorf("seed %d: nothing published in %d checks", seed, res.Checks)
	}
}

// TestPausedPublisherScenario: the article's other sequence, a paused
// worker that resumes and publishes after another claim has taken its row
// and finished: its complete is rejected, its record is in the log, and
// the consumer absorbs it.
func TestPausedPublisherScenario(t *testing.T) {
	h := harness(t, "leased", Options{})
	out := runProgram(t, h, PausedPublisherProgram())
	for _, v := range out.Violations {
		t.Errorf("violation: %s", v.Detail)
	}
	var gens []int64
	for _, r := range out.History.Log {
		gens = append(gens, r.Payload.Generation)
	}
	if fmt.Sprint(gens) != "[2 1]" {
		t.Errorf("records of generations %v, want [2 1]: the stale owner's after its successor's", gens)
	}
	stale := Completion{}
	for _, c := range out.History.Completions {
		if c.Worker == "w1" {
			stale = c
		}
	}
	if stale.Worker != "w1" || stale.Applied {
		t.Errorf("w1's complete %+v, want it sent and rejected", stale)
	}
	for class, want := range map[string]int{ClassStalePublish: 1, ClassRedelivered: 1, ClassConsumerDedup: 1} {
		if out.Coverage[class] != want {
			t.Errorf("coverage %s = %d, want %d", class, out.Coverage[class], want)
		}
	}
	if out.History.Effects["e1"] != 1 {
		t.Errorf("e1 applied %d times, want once", out.History.Effects["e1"])
	}
	if t.Failed() {
		t.Log("\n" + strings.Join(out.Lines, "\n"))
	}
}

// TestExternalBrokerRelay runs relay mode against a broker named by
// OUTBOXLAB_KAFKA_BROKERS (a kfake of the test's own, standing in for a
// Kafka): the same pipeline, its acknowledgments lost through the same
// proxies, and no restart attempted.
func TestExternalBrokerRelay(t *testing.T) {
	other, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close) // after the harness's cleanup, which deletes its topic there
	t.Setenv(broker.EnvBrokers, other.ListenAddrs()[0])
	h := harness(t, "leased", Options{})
	if h.Broker.Embedded() {
		t.Fatal("the harness started its own broker")
	}
	p := ArticleProgram()
	p.Steps = append(p.Steps, next("w2"), Step{Kind: NextAckLost, Worker: "w2"}, Step{Kind: BrokerRestart})
	p.Events = append(p.Events, "e2")
	out := runProgram(t, h, p)
	for _, v := range out.Violations {
		t.Errorf("violation: %s", v.Detail)
	}
	for class, want := range map[string]int{ClassRedelivered: 2, ClassAckLost: 1, ClassBrokerRestart: 0} {
		if out.Coverage[class] != want {
			t.Errorf("coverage %s = %d, want %d", class, out.Coverage[class], want)
		}
	}
	if t.Failed() {
		t.Log("\n" + strings.Join(out.Lines, "\n"))
	}
}
