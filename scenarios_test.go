package outboxlab

import (
	"context"
	"testing"

	"github.com/outboxlab/outboxlab/scenarios"
)

// TestArticleResultTable reproduces the article's result: the leased
// protocol passes all six tests; the baseline fails four and passes two.
func TestArticleResultTable(t *testing.T) {
	want := map[string]map[string]string{
		"leased": {
			"kill_and_recover": "pass", "open_claim_transaction": "pass",
			"stale_complete_rejected": "pass", "stale_retry_rejected": "pass",
			"retry_after_sent_rejected": "pass", "owner_outcomes_apply": "pass",
		},
		"baseline": {
			"kill_and_recover": "fail", "open_claim_transaction": "pass",
			"stale_complete_rejected": "fail", "stale_retry_rejected": "fail",
			"retry_after_sent_rejected": "fail", "owner_outcomes_apply": "pass",
		},
	}
	for protocol, table := range want {
		t.Run(protocol, func(t *testing.T) {
			inst := install(t, protocol)
			results := scenarios.Run(context.Background(), inst)
			if len(results) != len(table) {
				t.Fatalf("%d scenarios ran, want %d", len(results), len(table))
			}
			for _, r := range results {
				if r.Result != table[r.Scenario] {
					t.Errorf("%s %s: %s (%s), want %s", protocol, r.Scenario, r.Result, r.Detail, table[r.Scenario])
				}
				t.Logf("%-9s %-26s %s %s", protocol, r.Scenario, r.Result, r.Detail)
			}
		})
	}
}
