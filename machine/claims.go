package machine

import "github.com/outboxlab/outboxlab/model"

// A claim's id and token are kept by the claim's own identity
// (model.Claim.ID), never by its worker, event and generation: after a
// rewind a counter hands the same generation out again, and under
// fence=token or without a generation the possible states may count a
// row's claims differently. Keyed by the count, a lost claim's outcome
// went out with the id and token of the later claim that reissued it.

// receivedClaim is what a claim step returned for one row: the id its
// outcomes send as @id, and under fence=token its token.
type receivedClaim struct {
	id, token string
}

// receive notes what worker's claim step returned, row by row, until the
// model records those claims (bookClaims).
func (r *run) receive(worker string, got model.Outcome) {
	for _, g := range got.Grants() {
		rc := receivedClaim{id: r.claimedIDs[g.Event]}
		if r.fenceToken() {
			rc.token = r.tokens.claimed[g.Event]
		}
		r.received[[2]string{worker, g.Event}] = rc
	}
}

// latestClaim is the ID of the latest claim worker received of event, 0
// for none.
func (r *run) latestClaim(worker, event string) int {
	claims := r.model().Claims
	for i := len(claims) - 1; i >= 0; i-- {
		if claims[i].Worker == worker && claims[i].Event == event {
			return claims[i].ID
		}
	}
	return 0
}

// bookClaims gives every claim the step's possible states recorded (a
// claim's, or the commit of one inside a transaction) the id and token its
// worker received for it. Every possible state records the same claims,
// so the first one's new claims are every state's.
func (r *run) bookClaims(next []model.State) {
	if len(next) == 0 {
		return
	}
	before := len(r.model().Claims)
	for _, c := range next[0].Claims[min(before, len(next[0].Claims)):] {
		rc := r.received[[2]string{c.Worker, c.Event}]
		r.claimIDs[c.ID] = rc.id
		if r.fenceToken() {
			r.tokens.init()
			r.tokens.byClaim[c.ID] = rc.token
		}
	}
}
