package outboxlab

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/search"
	"pgregory.net/rapid"
)

// TestRecordedProgramIsThePrintedOne: the program a check keeps as a value
// (machine.Harness.Recorded), which the search shrinks and replays, is the
// program its printed lines read back as (machine.ParseProgram), which a
// user saves and replays: after every check, passed or failed, over the
// kinds of line a program holds: lost requests and replies (leased with
// faults), waiting steps and their ends (a race mutant), split parts, a
// step blocked in its worker and one failing with a server error (before
// its line is printed), ended sessions, crashes and rewinds, and each
// fence a line shows: gen=, claim= (jobs_lease) and token= (token_uuid).
// Each case must draw its kind of step. The server faults a random run
// draws too rarely for a short one (a restart, a stuck commit and its
// failover) are held by replayFaultPrograms, which replays a program of
// each.
func TestRecordedProgramIsThePrintedOne(t *testing.T) {
	honestSearch(t)
	faultsOff := catalogueConfig()
	cases := []struct {
		protocol string
		topology pgserver.Topology
		cfg      machine.Config
		checks   int
		holds    string                    // the kind of step the case is there for
		has      func(s machine.Step) bool // a step of that kind
	}{
		{"leased", pgserver.Single, machine.Default(), 20, "a lost request", faultIs(machine.ActRequestLost)},
		{"leased", pgserver.Single, machine.Default(), 20, "a lost reply", faultIs(machine.ActReplyLost)},
		{"testdata/mutants/race_complete_cte.sql", pgserver.Single, faultsOff, 20, "a waiting step", outIs(model.Waiting)},
		{"testdata/mutants/split_retry_check_then_act.sql", pgserver.Single, faultsOff, 20, "a split part",
			func(s machine.Step) bool { return s.Op.Part.Of > 0 }},
		{"testdata/mutants/claim_for_update.sql", pgserver.Single, faultsOff, 5, "a step blocked in its worker", unprinted},
		{"testdata/mutants/complete_keeps_lease.sql", pgserver.Single, faultsOff, 5, "a server error in its worker", unprinted},
		{"testdata/mutants/session_lease_any_holder.sql", pgserver.Single, machine.Default(), 10, "an ended session", opIs(model.EndSession)},
		{"testdata/correct/jobs_lease.sql", pgserver.Single, machine.Default(), 10, "claim=K",
			func(s machine.Step) bool { return s.Op.Fence.Kind == model.ShowNone && s.Op.Fence.Nth > 0 }},
		{"testdata/topologies/token_uuid.sql", pgserver.Single, machine.Default(), 10, "token=T",
			func(s machine.Step) bool { return s.Op.Fence.Kind == model.ShowToken && s.Op.Fence.Token != "" }},
		{"leased", pgserver.AsyncCommit, machine.Default(), 10, "a crash", opIs(model.Crash)},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%s/%s", strings.TrimSuffix(tc.protocol, ".sql"), tc.topology, tc.holds), func(t *testing.T) {
			var h *machine.Harness
			if tc.topology == pgserver.Single {
				h = harness(t, tc.protocol, tc.cfg)
			} else {
				h = topologyHarness(t, tc.topology, tc.protocol, tc.cfg)
			}
			compared, steps, held := 0, 0, 0
			var mismatches []string
			check := func(rt *rapid.T) {
				defer func() {
					lines := h.Program()
					if len(lines) == 0 {
						return // the check ended before its setup
					}
					printed, err := machine.ParseProgram(lines)
					recorded := h.Recorded()
					switch {
					case err != nil:
						mismatches = append(mismatches, fmt.Sprintf("the printed program does not read back: %v\n%s", err, strings.Join(lines, "\n")))
					case !samePrograms(printed, recorded):
						mismatches = append(mismatches, fmt.Sprintf("recorded:\n%s\nprinted:\n%s", recorded, strings.Join(lines, "\n")))
					}
					compared++
					steps += len(recorded.Steps)
					for _, s := range recorded.Steps {
						if tc.has(s) {
							held++
						}
					}
				}()
				h.Check(rt)
			}
			search.MeasureWith(t.Name(), h, check, map[string]string{"rapid.checks": fmt.Sprint(tc.checks), "rapid.seed": "1"})
			for _, m := range mismatches[:min(len(mismatches), 3)] {
				t.Errorf("a check's recorded program is not its printed one:\n%s", m)
			}
			if held == 0 {
				t.Fatalf("compared %d checks of %d steps, none with %s: the case holds nothing", compared, steps, tc.holds)
			}
			t.Logf("%d checks, %d steps, %d with %s: the recorded and the printed program agree", compared, steps, held, tc.holds)
		})
	}
}

func faultIs(fault string) func(machine.Step) bool {
	return func(s machine.Step) bool { return s.Fault == fault }
}

func opIs(kind model.Kind) func(machine.Step) bool {
	return func(s machine.Step) bool { return s.Op.Kind == kind }
}

func outIs(kind model.OutcomeKind) func(machine.Step) bool {
	return func(s machine.Step) bool { return s.Out.Kind == kind }
}

// unprinted is a step that failed in its worker before its line was
// printed: unknown, with no fault to make it so.
func unprinted(s machine.Step) bool { return s.Out.Kind == model.Unknown && s.Fault == "" }

// samePrograms compares two programs field by field, an empty list and
// none alike.
func samePrograms(a, b machine.Program) bool {
	return slices.Equal(a.Workers, b.Workers) && slices.Equal(a.Events, b.Events) &&
		slices.EqualFunc(a.Steps, b.Steps, func(x, y machine.Step) bool { return reflect.DeepEqual(x, y) })
}
