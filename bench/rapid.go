package bench

import (
	"flag"
	"strconv"
	"testing"

	"github.com/outboxlab/outboxlab/search"
	"pgregory.net/rapid"
)

// withRapid runs f with the rapid flags of checks per Check from seed (0:
// a random seed per Check) and no fail files (which would also replay an
// old failure first). f passes them to every check it runs (check, a
// Searcher's Flags), which holds them while it runs (search.WithRapidFlags).
func withRapid(checks int, seed uint64, f func(flags map[string]string) error) error {
	// rapid consults testing.Short, which panics outside `go test` until
	// the testing flags are registered and parsed.
	testing.Init()
	if !flag.Parsed() {
		flag.CommandLine.Parse(nil)
	}
	if testing.Short() {
		checks *= 5 // rapid runs a fifth of its budget under -short
	}
	return f(map[string]string{
		"rapid.checks":     strconv.Itoa(checks),
		"rapid.seed":       strconv.FormatUint(seed, 10),
		"rapid.nofailfile": "true",
	})
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
	search.WithRapidFlags(tb.Flags, func() { rapid.Check(tb, prop) })
	return !tb.Failed()
}
