package outboxlab

import (
	"testing"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/pgserver"
)

// TestDrainOutlastsDeletes: under delete-on-complete the drain claims and
// completes every row, even when its first claim is unknown (a restart
// broke the paused worker's connection). Its bound once shrank with every
// complete's delete, and this program, shrunk from a run on
// pooler-transaction, ended the drain with e4 still READY.
func TestDrainOutlastsDeletes(t *testing.T) {
	h := topologyHarness(t, pgserver.Single, "testdata/correct/delete_on_complete.sql", machine.Default())
	p, err := machine.ParseProgram([]string{
		"setup: 2 workers (w1 w2), events e1 e2 e3 e4",
		"  1. w1.Pause() -> ok",
		"  2. Restart() -> ok",
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := h.Replay(p)
	if err != nil {
		t.Fatal(err)
	}
	if v != nil {
		t.Fatalf("%s:\n%s", v.Rule, v.Detail)
	}
}
