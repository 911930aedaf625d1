package outboxlab

import (
	"os"
	"testing"
)

// The suite runs in two tiers, which differ in how much of the catalogue
// each verdict is checked on and with what budget, never in what a check
// asserts (docs/nightly.md):
//
//   - CI's, `go test ./...` (the README's command, what .ci/run runs on
//     every push): every mutant caught, every correct file and
//     fixed library passing at CI's pass budget, the profiles of
//     ciProfileLibraries, each topology and pooler with its CI protocols.
//   - The nightly's, OUTBOXLAB_NIGHTLY=1: everything at the default budget,
//     every library's profile on every topology its file pins, every
//     mutant's counterexample shrunk, the whole topology matrix.
//
// The CI tier exists because the whole matrix takes more than half an
// hour of a two-core machine per server version (1979 s for this package
// alone on PostgreSQL 15 at 1b89ab7, 2026-12-05, on two quiet cores), and
// CI runs it on two versions.
func nightly() bool { return os.Getenv("OUTBOXLAB_NIGHTLY") == "1" }

// nightlyOnly skips what only the nightly tier runs, saying how to run it.
func nightlyOnly(t *testing.T, what string) {
	t.Helper()
	if !nightly() {
		t.Skipf("%s: the nightly tier's (OUTBOXLAB_NIGHTLY=1 go test ./..., docs/nightly.md)", what)
	}
}

// ciProfileLibraries are the libraries whose pinned profile CI checks on
// single; the nightly checks every library's. They are the three whose
// profile search is cheapest (21 to 55 s each on two cores), and between
// them they break fencing, strict expiry, the terminal states and the
// attempt budget and keep the rest, so a change to the model or the
// search that moves one of those verdicts shows in CI.
var ciProfileLibraries = map[string]bool{"solid_queue": true, "pgmq": true, "pgqueuer": true}

// ciPassChecks is the checks per protocol CI gives a protocol that must
// pass (a correct file, a fixed library, an equivalent mutant, a race or
// split mutant on a machine without its steps): a tenth of the default
// budget. Every such file is still installed, run through the six
// scenarios and checked on every push, so a change that makes the
// model, the machine or the search refuse a correct protocol outright
// shows in CI; a false alarm that takes more checks to meet is the
// nightly's to find, at the default budget. (At 30 they took about 900
// of this package's 2200 seconds of test time on two quiet cores on the
// code before d2559c2, 2026-12-05; docs/performance.md.)
const ciPassChecks = "10"

// ciProfiles are the protocols whose whole profile CI searches
// (TestProfiles); the nightly searches every one. baseline breaks four
// properties, each found with the ones before it relaxed, and keeps the
// rest; complete_no_lease_check is the case the profile exists for, one
// break (strict expiry) behind a correct fence. Each of the nine took 22
// to 59 s of test time, since every property that holds runs its whole
// budget.
var ciProfiles = map[string]bool{"baseline": true, "testdata/mutants/complete_no_lease_check.sql": true}
