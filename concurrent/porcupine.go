package concurrent

import (
	"hash/fnv"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/outboxlab/outboxlab/model"
)

// node is one possible model state with its Key computed once: porcupine
// compares and hashes states far more often than it steps them.
type node struct {
	s   model.State
	key string
}

func newNode(s model.State) node { return node{s: s, key: s.Key()} }

// Model is the porcupine model of a protocol with policy p: the initial
// state is the outbox with events enqueued, a step is Steps (model.State's
// rules plus concurrency's), and a set of possible states carries the
// nondeterminism (order=any, batches, rescues, ambiguous outcomes) through
// porcupine's power-set construction.
func Model(p model.Policy, events []string, hasGen bool) porcupine.Model {
	return modelOf(p, events, func(s model.State, in Input, out Output) []model.State { return Steps(s, in, out, hasGen) })
}

// modelOf is Model with the step given: the naming of a broken rule
// (blame.go) steps one operation with a rule of the model lifted.
func modelOf(p model.Policy, events []string, step func(model.State, Input, Output) []model.State) porcupine.Model {
	init := model.NewWith(p)
	for _, e := range events {
		init = init.Step(model.Op{Kind: model.Enqueue, Event: e})[0].Next
	}
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{newNode(init)} },
		Step: func(state, input, output interface{}) []interface{} {
			var out []interface{}
			for _, s := range step(state.(node).s, input.(Input), output.(Output)) {
				out = append(out, newNode(s))
			}
			return out
		},
		Equal: func(a, b interface{}) bool { return a.(node).key == b.(node).key },
		Hash: func(state interface{}) uint64 {
			h := fnv.New64a()
			h.Write([]byte(state.(node).key))
			return h.Sum64()
		},
		DescribeOperation: func(input, output interface{}) string {
			return describe(input.(Input), output.(Output))
		},
		DescribeState: func(state interface{}) string { return describeState(state.(node).s) },
	}
	return nm.ToModel()
}

// describeState is a state as the visualisation shows it: each row, the
// open claim transactions.
func describeState(s model.State) string {
	var parts []string
	for _, r := range s.Rows {
		part := string(r.Event) + ":" + string(r.Status)
		if r.Gen > 0 {
			part += "/gen" + itoa(r.Gen)
		}
		if r.Status == model.InProgress && !r.LeaseLive {
			part += "/expired"
		}
		if r.LockedBy != "" {
			part += "/locked by " + r.LockedBy
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, " ")
}
