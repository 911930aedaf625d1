package search

import (
	"regexp"
	"strconv"
	"time"

	"github.com/outboxlab/outboxlab/pgserver"
)

// Search runs rapid.Check of h.Check with a recording TB named name. It
// searches with rapid's own shrinking off, then shrinks the program it
// found, a value (Catch.Recorded), by replaying it (Minimize: well under
// a second for the baseline, where rapid's shrinker, working on the
// random draws, takes thousands of checks), for at most shrink (0: 30s;
// a protocol of many statements per step, such as Solid Queue's, replays
// slowly and needs more to reach its minimal form). Faults are steps of
// the program like any other (a lost request or reply, a stuck commit, a
// restart, crash or failover), which a replay injects again at their
// step. A failure at the setup, before any step, has nothing to shrink.
//
// rapid's flags must be usable: under go test, or after testing.Init and
// flag parsing. It restores the flags it changes.
func (h Searcher) Search(name string, shrink time.Duration) Catch {
	c := h.measure(name)
	if !c.Caught || c.Failure == nil {
		return c
	}
	return h.minimizeFound(c, c, shrink)
}

// measure is the search's first pass: one rapid.Check of the budget in
// rapid's flags, or, for a shard, one check per seed of h.Seeds.
func (h Searcher) measure(name string) Catch {
	flags := Overlay(h.Flags, map[string]string{"rapid.shrinktime": "0s"})
	if h.Seeds != nil {
		return measureSeeds(name, h.Harness, h.Check, h.Seeds, flags)
	}
	return MeasureWith(name, h.Harness, h.Check, flags)
}

// minimizeFound shrinks from, a replayable form of what the search found,
// for at most budget (0: defaultShrink: a loaded machine replays slowly).
func (h Searcher) minimizeFound(found, from Catch, budget time.Duration) Catch {
	if budget == 0 {
		budget = h.defaultShrink()
	}
	return h.keepSearch(found, h.Minimize(from, budget))
}

// defaultShrink is the shrinking budget when none is given: 30s, or three
// minutes on a topology whose fault is a crash or a failover, where every
// replay that keeps it pays a fifth of a second to two seconds for it.
// Minimize stops sooner when nothing shrinks further.
func (h Searcher) defaultShrink() time.Duration {
	if h.Faults != nil {
		switch h.Faults.ServerFault() {
		case pgserver.FaultCrash, pgserver.FaultFailover:
			return 3 * time.Minute
		}
	}
	return 30 * time.Second
}

// keepSearch is the shrunk result with the search's own figures: checks
// to the first failure, time to find it, rapid's report and seed.
func (h Searcher) keepSearch(found, shrunk Catch) Catch {
	shrunk.Caught = true
	shrunk.Checks, shrunk.ToFind, shrunk.Report = found.Checks, found.ToFind, found.Report
	return shrunk
}

var seedInReport = regexp.MustCompile(`-rapid\.seed=(\d+)`)

// FailingSeed is the seed rapid reported for the failing check: from it,
// the first check fails (the reproduce line's `check --checks 1 --seed`).
// base when rapid reported none. rapid gives the seed of a failing check
// only in its report; the search needs none, since the counterexample is
// a value (Catch.Recorded), replayed and shrunk without it.
func (c Catch) FailingSeed(base uint64) uint64 {
	if m := seedInReport.FindStringSubmatch(c.Report); m != nil {
		seed, _ := strconv.ParseUint(m[1], 10, 64)
		return seed
	}
	return base
}
