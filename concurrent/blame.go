package concurrent

import (
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/outboxlab/outboxlab/model"
)

// Naming the rule a failing part breaks. "No order of these operations is
// allowed" is true and tells a reader little: which operation did what the
// model forbids? The sequential machine answers that with the rule of the
// step that broke (model.Explain, model.ExplainRows, model.CheckChange).
// Here no step is known to be wrong, only the whole; so the part is
// checked again with one operation allowed to break one rule, each
// operation and rule in turn, and the first pair under which the part
// linearizes names the breach. The operation that did it is then stepped
// along that order to the state it ran from, and the sequential model
// names what it did there, as the state machine would have.
//
// A search, like the shrink: one operation breaking one rule explains the
// part, and that is what the verdict says, not that no other explanation
// exists. The order of the search decides between explanations:
//
//   - first a rescue that acted on a live lease as if it had expired (a
//     rescue that read its rows, then wrote them by id after an owner
//     renewed or a claim took them: docs/races.md's split rescue), tried
//     before any relaxed property, because the renew that made the lease
//     live looks, to the relaxed one_live_owner, like a renew that granted
//     too short a lease, which explains the same history the wrong way;
//   - then each property of model.Relax but one_live_owner, last for the
//     same reason;
//   - within a rule, the operations other than the culprit in order of
//     call, then the culprit: an observer is blamed only when no write
//     before it explains what it saw.

// breach is a broken rule of the model, as the state machine names it.
type breach struct {
	Rule   string // rescue took e1 whose lease is live
	Detail string // after Rescue() -> ok, e1 is DEAD: a rescue must not change a live lease
}

// deviation is one way an operation may break one rule: the states its
// step may reach only by breaking it.
type deviation struct {
	kinds []model.Kind
	steps func(s model.State, in Input, out Output, hasGen bool) []model.State
}

// deviations are tried in this order (see above).
func deviations() []deviation {
	out := []deviation{{kinds: []model.Kind{model.Rescue}, steps: rescueOfLiveLease}}
	outcomes := []model.Kind{model.ClaimOp, model.Begin, model.Commit, model.Complete, model.Retry, model.Renew, model.Rescue}
	for _, p := range []model.Property{model.Fencing, model.StrictExpiry, model.Terminal, model.AttemptBudget,
		model.FIFOOrder, model.NoStrandedRow, model.Backoff, model.OneLiveOwner} {
		out = append(out, deviation{kinds: outcomes, steps: relaxedSteps(p)})
	}
	return out
}

// rescueOfLiveLease is a rescue that took one live lease as if it had
// expired: what a rescue does that chose its rows by an earlier read.
func rescueOfLiveLease(s model.State, in Input, out Output, _ bool) []model.State {
	var next []model.State
	for _, r := range s.Rows {
		if r.Status != model.InProgress || !r.LeaseLive || r.LockedBy != "" {
			continue
		}
		expired := s.Step(model.Op{Kind: model.Expire, Event: r.Event})
		if len(expired) != 1 {
			continue
		}
		next = append(next, rescueSteps(expired[0].Next, in, out)...)
	}
	return model.Dedup(next)
}

// relaxedSteps is a step with property p relaxed for it alone.
func relaxedSteps(p model.Property) func(model.State, Input, Output, bool) []model.State {
	return func(s model.State, in Input, out Output, hasGen bool) []model.State {
		loose := s
		loose.Policy.Relax |= p
		next := Steps(loose, in, out, hasGen)
		for i := range next {
			next[i].Policy = s.Policy
		}
		return model.Dedup(next)
	}
}

// blame names the rule a failing part breaks: its culprit (an operation
// without which it linearizes) is found again, then nameBreach. Bounded by
// limit; ok is false when nothing was named in it.
func blame(p model.Policy, events []string, hasGen bool, part []porcupine.Operation, limit time.Duration) (breach, bool) {
	deadline := time.Now().Add(limit)
	m := Model(p, events, hasGen)
	illegal := func(h []porcupine.Operation) bool {
		return porcupine.CheckOperationsTimeout(m, h, time.Until(deadline)+time.Second) == porcupine.Illegal
	}
	culprit, ok := findCulprit(part, illegal)
	if !ok {
		return breach{}, false
	}
	return nameBreach(p, events, hasGen, part, culprit, deadline)
}

// nameBreach is the rule one operation of part (a failing part whose
// culprit is culprit) broke, found as described above; ok is false when
// no deviation explains the part, or the time ran out.
func nameBreach(p model.Policy, events []string, hasGen bool, part []porcupine.Operation, culprit porcupine.Operation, deadline time.Time) (b breach, ok bool) {
	order := slices.Clone(part)
	slices.SortStableFunc(order, func(a, b porcupine.Operation) int {
		switch {
		case same(a, culprit) != same(b, culprit):
			if same(a, culprit) {
				return 1
			}
			return -1
		case a.Call != b.Call:
			return int(a.Call - b.Call)
		}
		return 0
	})
	for _, d := range deviations() {
		for _, o := range order {
			if time.Now().After(deadline) {
				return breach{}, false
			}
			if !slices.Contains(d.kinds, o.Input.(Input).Op.Kind) || o.Input.(Input).Observe {
				continue
			}
			if b, ok := tryDeviation(p, events, hasGen, part, o, d, deadline); ok {
				return b, true
			}
		}
	}
	return breach{}, false
}

// tryDeviation checks part with o allowed to deviate as d does and, when
// it then linearizes, names what o did in that order.
func tryDeviation(p model.Policy, events []string, hasGen bool, part []porcupine.Operation, o porcupine.Operation, d deviation, deadline time.Time) (breach, bool) {
	h := slices.Clone(part)
	k := slices.IndexFunc(h, func(x porcupine.Operation) bool { return same(x, o) })
	in := h[k].Input.(Input)
	in.deviate = true
	h[k].Input = in
	step := func(s model.State, in Input, out Output) []model.State {
		next := Steps(s, in, out, hasGen)
		if in.deviate {
			next = model.Dedup(append(next, d.steps(s, in, out, hasGen)...))
		}
		return next
	}
	res, info := porcupine.CheckOperationsVerbose(modelOf(p, events, step), h, time.Until(deadline)+time.Second)
	if res != porcupine.Ok {
		return breach{}, false
	}
	lin := info.PartialLinearizations()
	if len(lin) == 0 || len(lin[0]) == 0 {
		return breach{}, false
	}
	return describeBreach(p, events, hasGen, h, lin[0][0], k, d)
}

// describeBreach steps the linearization order of h (indexes) to the
// deviating operation h[k], takes a state it ran from and a state only the
// deviation reaches from there that the rest of the order can follow, and
// names the rule as the sequential model does.
func describeBreach(p model.Policy, events []string, hasGen bool, h []porcupine.Operation, order []int, k int, d deviation) (breach, bool) {
	init := model.NewWith(p)
	for _, e := range events {
		init = init.Step(model.Op{Kind: model.Enqueue, Event: e})[0].Next
	}
	strict := func(states []model.State, i int) []model.State {
		var next []model.State
		for _, s := range states {
			next = append(next, Steps(s, h[i].Input.(Input), h[i].Output.(Output), hasGen)...)
		}
		return model.Dedup(next)
	}
	at := slices.Index(order, k)
	if at < 0 {
		return breach{}, false
	}
	states := []model.State{init}
	for _, i := range order[:at] {
		states = strict(states, i)
	}
	in, out := h[k].Input.(Input), h[k].Output.(Output)
	for _, s := range states {
		allowed := Steps(s, in, out, hasGen)
		for _, t := range d.steps(s, in, out, hasGen) {
			if slices.ContainsFunc(allowed, func(a model.State) bool { return a.Key() == t.Key() }) {
				continue
			}
			rest := []model.State{t}
			for _, i := range order[at+1:] {
				rest = strict(rest, i)
			}
			if len(rest) == 0 {
				continue
			}
			if b, ok := nameStep(s, t, allowed, in.Op, out, hasGen); ok {
				return b, true
			}
		}
	}
	return breach{}, false
}

// nameStep names what op did going from s to t, where the model allowed
// only the states in allowed (with the outcome it returned, out): the
// outcome's own rule (Explain), else the rule the rows after it break
// (ExplainRows), else the change no step may make (CheckChange).
func nameStep(s, t model.State, allowed []model.State, op model.Op, out Output, hasGen bool) (breach, bool) {
	if err := model.Explain(s, op, out.Out, s.Step(op)); err != nil {
		_, why, _ := strings.Cut(err.Error(), ": ")
		if !strings.HasPrefix(why, "want ") && !strings.HasPrefix(why, "the model cannot run") {
			return breach{Rule: why, Detail: err.Error()}, true
		}
	}
	for _, a := range allowed {
		if rule, detail := model.ExplainRows(op, a, t.View(hasGen)); rule != "" {
			return breach{Rule: rule, Detail: detail}, true
		}
	}
	if err := model.CheckChange(s.Policy, s.View(hasGen), t.View(hasGen), op, out.Out); err != nil {
		return breach{Rule: err.Error(), Detail: model.FormatStep(op, out.Out) + ": " + err.Error()}, true
	}
	return breach{}, false
}
