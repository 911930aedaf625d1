package machine

import (
	"fmt"

	"github.com/outboxlab/outboxlab/model"
)

// Fencing tokens (fence=token, PROTOCOL-FORMAT.md "Version 3"): the model
// predicts no value, so it judges a token protocol as one without a
// generation (hasGen is false: the model's own count stands for each
// claim), while the machine keeps each claim's token, sends it back as
// @generation, and holds the protocol to the one promise a token makes:
// a claim hands its row a token the row never had, counting every token
// a read has shown, claims a rewind later lost included.

// fenceToken reports whether the protocol's generation is a token.
func (r *run) fenceToken() bool { return r.h.Inst.Statements.Token }

// tokenBook keeps the tokens: each claim's, by the claim's model identity,
// and every one a read has shown.
type tokenBook struct {
	byClaim map[int]string             // by model.Claim.ID (claims.go)
	claimed map[string]string          // the last claim step's tokens, by event
	seen    map[string]map[string]bool // every token a read showed, by event
}

func (b *tokenBook) init() {
	if b.byClaim == nil {
		b.byClaim, b.claimed, b.seen = map[int]string{}, map[string]string{}, map[string]map[string]bool{}
	}
}

// noteClaimed keeps a claim step's tokens until the model has named its
// claims (judge).
func (r *run) noteClaimed(event, token string) {
	if r.fenceToken() {
		r.tokens.init()
		r.tokens.claimed[event] = token
	}
}

// checkTokens holds the claims a step received to the token's promise and
// keeps their tokens: a token any read has shown for the row is a reissue.
func (r *run) checkTokens(op model.Op, got model.Outcome) {
	if !r.fenceToken() || got.Kind != model.Claimed {
		return
	}
	r.tokens.init()
	for _, g := range got.Grants() {
		tok := r.tokens.claimed[g.Event]
		if r.tokens.seen[g.Event][tok] {
			r.fail("token reissued", fmt.Sprintf("%s: %s was handed token %s again (fence=token: a claim's token must be new to its row, "+
				"a claim a rewind lost included)", r.shownStep(op, got), g.Event, tok))
		}
	}
}

// seeTokens remembers every token a read showed.
func (r *run) seeTokens(tokens map[string]string) {
	if !r.fenceToken() {
		return
	}
	r.tokens.init()
	for e, tok := range tokens {
		if tok == "" {
			continue // NULL: never claimed
		}
		if r.tokens.seen[e] == nil {
			r.tokens.seen[e] = map[string]bool{}
		}
		r.tokens.seen[e][tok] = true
	}
}

// tokenOf is the token a claim returned, sent back as its @generation.
func (r *run) tokenOf(c model.Claim) string {
	if !r.fenceToken() {
		return ""
	}
	return r.tokens.byClaim[c.ID]
}
