package sut

import (
	"strings"

	"github.com/outboxlab/outboxlab/model"
)

// RuleName is a step kind as a failure's rule begins it ("claim blocked",
// "complete timed out"): a claim in a transaction is a claim.
func RuleName(k model.Kind) string {
	if k == model.ClaimOp || k == model.Begin {
		return "claim"
	}
	return strings.ToLower(string(k))
}
