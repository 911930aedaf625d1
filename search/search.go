package search

import (
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

// FailingSeed is the seed of the failing check c found: from it, that
// check runs alone (the reproduce line's `check --checks 1 --seed`). A
// shard's check has its own seed (h.Seeds); in a whole run from base,
// check i runs from SeedOfCheck(base, i), the seed rapid derives for it
// (TestShardsSplitTheSeeds holds the derivation to what rapid does, and
// TestFailingSeedIsRapids to the seed its report names).
func (h Searcher) FailingSeed(c Catch, base uint64) uint64 {
	i := max(c.Checks-1, 0)
	if h.Seeds != nil {
		return h.Seeds[min(i, len(h.Seeds)-1)]
	}
	return SeedOfCheck(base, i)
}
