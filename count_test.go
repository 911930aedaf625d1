package outboxlab

import (
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/machine"
)

// TestCountSentAfterALostCommitIsTheHarnesss: jobs_lease and jobs_uuid
// return no generation; the suite sends its own count of the row's claims
// as @generation. After a claim transaction's commit whose reply was lost,
// the states the model allows count the row's claims differently, and the
// drain's complete went out with the first state's count. The commit had
// landed, so the protocol refused a count one short, and the verdict was
// "current owner's complete rejected" on a correct file (the false-alarm
// sweep's first run of each, model/count.go). Replayed, both pass, and the
// program says why the complete was refused.
func TestCountSentAfterALostCommitIsTheHarnesss(t *testing.T) {
	program := []string{
		"setup: 2 workers (w1 w2), events e1",
		"  1. w2.Claim() -> claimed e1",
		"  2. w1.Begin(expire e1) -> claimed e1",
		"  3. w1.Commit() -> unknown   // reply_lost, ambiguous: applied or not, decided by the next read",
	}
	for _, file := range []string{"testdata/correct/jobs_lease.sql", "testdata/correct/jobs_uuid.sql"} {
		t.Run(file, func(t *testing.T) {
			printed := replayToAPass(t, harness(t, file, machine.Default()), program)
			if !strings.Contains(printed, "is not the row's in every state the model allows: rejected there") {
				t.Errorf("the drain's complete was not refused for its count, or the program does not say so:\n%s", printed)
			}
		})
	}
}
