package outboxlab

import (
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/pgserver"
)

// lostThenReissued is a program async-standby's search once found against
// a correct token fence: w2's first claim of e1 is lost in the failover,
// w2 claims e1 again inside a transaction whose commit's reply is lost
// (the commit landed), and w2 sends an outcome for the claim the failover
// lost. Both claims are gen 1 by the row's count; only the first is the
// claim the outcome is for, and it went out with that claim's own token.
const lostThenReissued = `setup: 2 workers (w1 w2), events e1
  1. w2.Claim() -> claimed e1 gen=1
  2. Age(e1) -> ok
  3. Failover() -> rewound 1 acknowledged commit
  4. w2.Begin() -> claimed e1 gen=1
  5. w2.Commit() -> unknown   // reply_lost, ambiguous: applied or not, decided by the next read
  6. w2.Complete(e1, gen=1) -> rejected`

// TestTokenFenceAcrossALostClaim replays that program: a uuid token fence
// refuses the lost claim's complete and passes; the article's counter
// fence applies it on the reissued count and fails for that reason. A
// claim is known by its own identity (model.Claim.ID), so the lost claim's
// outcome carries the lost claim's token, not the one the later claim of
// the same count received.
func TestTokenFenceAcrossALostClaim(t *testing.T) {
	p, err := machine.ParseProgram(strings.Split(lostThenReissued, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ protocol, rule string }{
		{topologyDir + "/token_uuid.sql", ""},
		{"leased", reissuedRule},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			h := topologyHarness(t, pgserver.AsyncStandby, tc.protocol, machine.Default())
			replayed := replayExpecting(t, h, p, tc.protocol, tc.rule)
			if !strings.Contains(replayed, "reply_lost") || !strings.Contains(replayed, "rewound 1 acknowledged commit") {
				t.Errorf("the replay did not lose the commit's reply and the claim:\n%s", replayed)
			}
			// Each line shows the protocol's own fence: the token's first
			// characters, never a count the token protocol did not return.
			if tc.rule == "" && (strings.Contains(replayed, "gen=") || !strings.Contains(replayed, "claimed e1 token=") ||
				!strings.Contains(replayed, "w2.Complete(e1, token=")) {
				t.Errorf("the token protocol's lines show no token, or a generation:\n%s", replayed)
			}
		})
	}
}
