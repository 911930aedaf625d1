package relay

import (
	"testing"

	"github.com/outboxlab/outboxlab/broker"
)

// The properties as pure functions: a history that keeps each and one
// that breaks only it.

func record(offset int64, event string, gen int64, serial int) broker.Record {
	return broker.Record{Offset: offset, Key: event, EventID: event,
		Payload: broker.Payload{Event: event, Generation: gen, Worker: "w1", Serial: serial}}
}

// good is the article's history: w1 publishes e1 and dies, w2 publishes
// it again and completes, the consumer applies it once.
func good() History {
	return History{
		Events: []string{"e1"},
		Final:  map[string]string{"e1": "SENT"},
		Pubs: []Publication{
			{Step: 1, Worker: "w1", Event: "e1", Gen: 1, Serial: 1, Acked: true},
			{Step: 5, Worker: "w2", Event: "e1", Gen: 2, Serial: 2, Acked: true},
		},
		Completions: []Completion{{Step: 6, Worker: "w2", Event: "e1", Gen: 2, Applied: true}},
		Consumed:    []Consumption{{0, "e1", 1, true}, {1, "e1", 2, false}},
		Log:         []broker.Record{record(0, "e1", 1, 1), record(1, "e1", 2, 2)},
		Effects:     map[string]int{"e1": 1},
	}
}

func TestJudgeRules(t *testing.T) {
	if v := Judge(good()); len(v) != 0 {
		t.Fatalf("the article's history broke %v", v)
	}
	for _, tt := range []struct {
		name   string
		rule   string
		break_ func(h *History)
	}{
		{"complete before the ack", RulePublishedBeforeComplete, func(h *History) { h.Completions[0].Step = 4 }},
		{"completing claim never acked", RulePublishedBeforeComplete, func(h *History) { h.Pubs[1].Acked = false }},
		{"acked record missing from the log", RulePublishedBeforeComplete, func(h *History) { h.Log = h.Log[:1] }},
		{"another claim's publication", RulePublishedBeforeComplete, func(h *History) { h.Completions[0].Gen = 3 }},
		{"key with the generation", RuleSameEventID, func(h *History) { h.Log[1].Key = "e1/2" }},
		{"header with the generation", RuleSameEventID, func(h *History) { h.Log[0].EventID = "e1/1" }},
		{"applied twice", RuleAppliedOnce, func(h *History) { h.Effects["e1"] = 2 }},
		{"never applied", RuleNoEventLost, func(h *History) { h.Effects["e1"] = 0 }},
	} {
		h := good()
		tt.break_(&h)
		got := Judge(h)
		if len(got) != 1 || got[0].Rule != tt.rule {
			t.Errorf("%s: broke %v, want %q alone", tt.name, got, tt.rule)
		}
	}
	// An event that died of its attempt budget is not lost; a rejected
	// complete needs no publication.
	h := good()
	h.Final["e1"], h.Effects["e1"] = "DEAD", 0
	h.Completions[0].Applied = false
	if v := Judge(h); len(v) != 0 {
		t.Errorf("a DEAD event broke %v", v)
	}
}

func TestCounts(t *testing.T) {
	h := good()
	h.Pubs[0].AckLost = true
	got := Counts(h)
	want := map[string]int{ClassPublished: 2, ClassRedelivered: 1, ClassAckLost: 1, ClassConsumerDedup: 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
}

// TestProgramLines pins how steps print in a counterexample.
func TestProgramLines(t *testing.T) {
	for _, tt := range []struct {
		s    Step
		want string
	}{
		{Step{Kind: Next, Worker: "w1"}, "w1.next"},
		{Step{Kind: NextAckLost, Worker: "w2"}, "w2.next_ack_lost"},
		{Step{Kind: ExpireLease, Event: "e1"}, "expire(e1)"},
		{Step{Kind: BrokerRestart}, "broker_restart"},
	} {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("%#v prints %q, want %q", tt.s, got, tt.want)
		}
	}
	// The same seed draws the same program.
	a, b := Generate(7, 3, 3, 8, true), Generate(7, 3, 3, 8, true)
	if len(a.Steps) == 0 || len(a.Steps) != len(b.Steps) || a.Steps[0] != b.Steps[0] {
		t.Errorf("seed 7 drew %v then %v", a.Steps, b.Steps)
	}
}

// TestGenerateFaults: without faults no lost acknowledgment or broker
// restart is drawn; with them both are, over a few seeds.
func TestGenerateFaults(t *testing.T) {
	seen := map[string]bool{}
	for seed := range uint64(50) {
		for _, s := range Generate(seed, 3, 3, 8, false).Steps {
			if s.Kind == NextAckLost || s.Kind == BrokerRestart {
				t.Fatalf("seed %d drew %s without faults", seed, s)
			}
		}
		for _, s := range Generate(seed, 3, 3, 8, true).Steps {
			seen[s.Kind] = true
		}
	}
	if !seen[NextAckLost] || !seen[BrokerRestart] {
		t.Errorf("50 seeds with faults drew %v", seen)
	}
}
