package outboxlab

import (
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/search"
)

// TestDrainReachesEveryDeletedRow: under done=delete a completed row leaves
// the model's rows, and the drain once bounded its claims by the rows left
// after each one: after a restart broke the paused worker's connection,
// the drain's first claim came back unknown, three rows were claimed and
// deleted, and the bound fell below the loop's count with e4 still READY
// (seed 1 of testdata/correct/delete_on_complete.sql failed it as "an event
// never reached SENT"). The drain now claims until nothing is claimable.
func TestDrainReachesEveryDeletedRow(t *testing.T) {
	cfg := mutantConfig()
	cfg.Faults = true // the injector restarts the server
	h := harness(t, "testdata/correct/delete_on_complete.sql", cfg)
	p, err := machine.ParseProgram([]string{
		"setup: 2 workers (w1 w2), events e1 e2 e3 e4",
		"  1. w1.Pause() -> ok",
		"  2. Restart() -> ok",
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := h.Replay(p)
	if err != nil || v != nil {
		t.Fatalf("replay: violation %v, err %v\n%s", v, err, strings.Join(h.Program(), "\n"))
	}
	if got := strings.Join(h.Program(), "\n"); !strings.Contains(got, "w1.Complete(e4, gen=1) -> applied") {
		t.Errorf("the drain did not complete e4:\n%s", got)
	}
}

// TestDrainCompletesTheClaimItReceived: jobs_uuid's claims return no
// generation. After a reclaim's commit was lost (request_lost) the model
// keeps two counts for the row, and the drain's complete once went out for
// the count of the first possible state: rejected, the row still claimed,
// the next claim empty, and the correct protocol failed as "an event never
// reached SENT" (seed 1 of its default check found it; the check of seed 4
// alone is that program). The drain then learned to release such a row
// and claim it again. Now the drain's complete names the claim the worker
// just received by its own identity (model.Claim.ID), whatever count each
// state gives it: it applies at once, and the check of seed 4 still loses
// the reclaim's commit on its way.
func TestDrainCompletesTheClaimItReceived(t *testing.T) {
	honestSearch(t)
	setRapidFlag(t, "rapid.seed", "4")
	setRapidFlag(t, "rapid.checks", "1")
	h := harness(t, "testdata/correct/jobs_uuid.sql", machine.Default())
	c := search.On(h).Search(t.Name(), shrinkBudget)
	if c.Caught {
		t.Fatalf("false alarm: %s\n%s", c.Report, strings.Join(c.Program, "\n"))
	}
	program := strings.Join(h.Program(), "\n")
	if !strings.Contains(program, "Commit() -> unknown   // request_lost") {
		t.Errorf("seed 4 no longer loses a reclaim's commit (pick another seed):\n%s", program)
	}
	_, drain, _ := strings.Cut(program, "-- drain --")
	if strings.Contains(drain, "-> rejected") {
		t.Errorf("the drain's complete was rejected: it named another claim than the one its worker received:\n%s", program)
	}
}
