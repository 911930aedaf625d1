package machine

import "github.com/outboxlab/outboxlab/model"

// A program line shows the protocol's own fence (model/fence.go): a
// counter's generation, a token's first characters, or for a protocol
// without a fence which of the worker's claims of the row an outcome is
// for. The model's count of a row's claims, which the machine judges by
// for protocols without a counter, is shown only where it is the
// protocol's.

// fenceShown is the fence this protocol's lines show.
func (r *run) fenceShown() model.FenceKind {
	switch {
	case r.fenceToken():
		return model.ShowToken
	case !r.h.Inst.Statements.HasGen:
		return model.ShowNone
	}
	return model.ShowGen
}

// shownOp is op as its line shows it.
func (r *run) shownOp(op model.Op) model.Op {
	switch op.Kind {
	case model.Complete, model.Retry, model.Renew:
	default:
		return op
	}
	c := r.claimOf(op)
	switch r.fenceShown() {
	case model.ShowToken:
		op.Fence = model.Fence{Kind: model.ShowToken, Token: model.ShortToken(r.tokenOf(c))}
	case model.ShowNone:
		op.Fence = model.Fence{Kind: model.ShowNone, Nth: max(r.model().NthClaim(c), 1)}
	}
	return op
}

// shownOutcome is what a step returned as its line shows it: a claim's
// rows with the tokens this step's claim returned, or with no fence.
func (r *run) shownOutcome(got model.Outcome) model.Outcome {
	if got.Kind != model.Claimed {
		return got
	}
	got.Shown = r.fenceShown()
	if got.Shown == model.ShowToken {
		got.Tokens = nil
		for _, g := range got.Grants() {
			got.Tokens = append(got.Tokens, model.ShortToken(r.tokens.claimed[g.Event]))
		}
	}
	return got
}

// shownModel is an outcome the model allows as a line shows it: the
// model predicts no token, and its count is not a fenceless protocol's.
func (r *run) shownModel(out model.Outcome) model.Outcome {
	if out.Kind == model.Claimed && r.fenceShown() != model.ShowGen {
		out.Shown = model.ShowNone
	}
	return out
}

// shownStep is a step's line: op and what it returned.
func (r *run) shownStep(op model.Op, got model.Outcome) string {
	return model.FormatStep(r.shownOp(op), r.shownOutcome(got))
}
