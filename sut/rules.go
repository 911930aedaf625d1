package sut

import (
	"regexp"
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

// The messages of the ProtocolErrors this package writes whose text
// carries a count or an event, which a rule must not.
var (
	rowCount   = regexp.MustCompile(`^(\w+) returned \d+ rows$`)
	batchCount = regexp.MustCompile(`^claim returned \d+ rows, more than batch=\d+$`)
	twice      = regexp.MustCompile(`^claim returned event .* twice$`)
)

// ProtocolRule is the rule a result the format forbids breaks, the same
// whatever the row count: "claim returned 3 rows" while shrinking drops an
// event is still the rule "claim returned more than one row". The state
// machine and the concurrent mode name it alike.
func ProtocolRule(msg string) string {
	switch {
	case batchCount.MatchString(msg):
		return "claim returned more than batch rows"
	case twice.MatchString(msg):
		return "claim returned an event twice"
	}
	if m := rowCount.FindStringSubmatch(msg); m != nil {
		return m[1] + " returned more than one row"
	}
	return msg
}
