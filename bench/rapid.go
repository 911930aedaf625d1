package bench

import (
	"flag"
	"strconv"
	"sync"
	"testing"

	"github.com/outboxlab/outboxlab/search"
	"pgregory.net/rapid"
)

// rapid takes its budget from its command-line flags, read when a Check
// starts and never written during one: setting them between measurements,
// with no Check running, is safe, and so are concurrent Checks with
// separate TBs and harnesses once they are set.
var rapidMu sync.Mutex

// withRapid runs f with rapid set to checks per Check from seed (0: a
// random seed per Check) and no fail files (which would also replay an
// old failure first), and restores the flags after.
func withRapid(checks int, seed uint64, f func() error) error {
	rapidMu.Lock()
	defer rapidMu.Unlock()
	// rapid consults testing.Short, which panics outside `go test` until
	// the testing flags are registered and parsed.
	testing.Init()
	if !flag.Parsed() {
		flag.CommandLine.Parse(nil)
	}
	if testing.Short() {
		checks *= 5 // rapid runs a fifth of its budget under -short
	}
	set := map[string]string{
		"rapid.checks":     strconv.Itoa(checks),
		"rapid.seed":       strconv.FormatUint(seed, 10),
		"rapid.nofailfile": "true",
	}
	defer search.SetRapidFlags(set)()
	return f()
}

// check runs rapid.Check on prop outside `go test` and reports whether the
// property held; tb holds what rapid reported.
func check(tb *search.RecordingTB, prop func(*rapid.T)) (passed bool) {
	defer func() {
		// A failing Check ends with tb.FailNow's panic.
		if r := recover(); r != nil && !tb.Failed() {
			panic(r)
		}
		passed = !tb.Failed()
	}()
	rapid.Check(tb, prop)
	return !tb.Failed()
}
