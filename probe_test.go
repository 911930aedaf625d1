package outboxlab

import (
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/machine"
)

func TestProbeShrink(t *testing.T) {
	honestSearch(t)
	for i := 0; i < 4; i++ {
		h := harness(t, "testdata/mutants/owner_instead_of_generation.sql", mutantConfig())
		c := machine.Measure(t.Name(), h, h.Check)
		p, err := machine.ParseProgram(c.Program)
		t0 := time.Now()
		q := h.ShrinkProgram(p, c.Failure.Rule, time.Now().Add(20*time.Second))
		t.Logf("%v rapid:\n%s\nshrunk (%v) %d: %+v", err, strings.Join(c.Program, "\n"), time.Since(t0), len(q.Steps), q)
	}
}
