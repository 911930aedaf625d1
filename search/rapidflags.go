package search

import (
	goflag "flag"
	"fmt"
	"maps"
	"sync"
)

// rapid reads its budget from its flags, which are globals of the
// process: the checks and the seed when a check starts, the shrink time
// when its shrinking starts, the steps at every Repeat. A search that set
// them for itself (the fallback's one check from a failing seed) while a
// sibling test's search started its own rapid.Check gave the sibling one
// check from another protocol's seed: for a file that must pass, a false
// pass; and two restores that interleave left the budget changed for the
// tests after them.
//
// So every search holds the flags it runs under for the whole of its
// rapid.Check (WithRapidFlags). Searches that want the same values run
// beside each other; one that wants other values waits until the holders
// are done, and the ones that come after it wait for it, in the order
// they came. Nothing writes a flag while a check runs under another value.

// managedFlags are the flags a budget is made of: a search's effective
// budget is their values, the command line's (or a test's) overlaid with
// what the search sets.
var managedFlags = []string{"rapid.checks", "rapid.seed", "rapid.shrinktime", "rapid.steps", "rapid.nofailfile", "rapid.failfile"}

// budget is who holds rapid's flags now.
var budget = struct {
	mu      sync.Mutex
	changed *sync.Cond
	holders int
	base    map[string]string // the flags as they were before the first holder
	values  map[string]string // the flags the holders run under
	next    uint64            // the ticket the next caller takes
	serving uint64            // the ticket whose turn it is
}{}

func init() { budget.changed = sync.NewCond(&budget.mu) }

// WithRapidFlags runs fn (which runs rapid.Check) with rapid's flags set
// as set says, the others as the command line or the test left them, and
// puts them back after the last search that holds them.
func WithRapidFlags(set map[string]string, fn func()) {
	release := holdRapidFlags(set)
	defer release()
	fn()
}

// holdRapidFlags waits for its turn and for the flags to be free or set
// to the same values, takes them, and returns what lets them go.
func holdRapidFlags(set map[string]string) (release func()) {
	b := &budget
	b.mu.Lock()
	defer b.mu.Unlock()
	ticket := b.next
	b.next++
	for {
		if ticket == b.serving {
			if b.holders == 0 {
				b.base = currentFlags()
				b.values = overlay(b.base, set)
				for name, value := range b.values {
					setRapidFlag(name, value)
				}
				break
			}
			if maps.Equal(overlay(b.base, set), b.values) {
				break
			}
		}
		b.changed.Wait()
	}
	b.holders++
	b.serving++
	b.changed.Broadcast()
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.holders--
		if b.holders == 0 {
			for name, value := range b.base {
				setRapidFlag(name, value)
			}
		}
		b.changed.Broadcast()
	}
}

// currentFlags are the managed flags' values now.
func currentFlags() map[string]string {
	out := make(map[string]string, len(managedFlags))
	for _, name := range managedFlags {
		out[name] = rapidFlag(name)
	}
	return out
}

// overlay is base with set's values over it.
func overlay(base, set map[string]string) map[string]string {
	out := maps.Clone(base)
	for name, value := range set {
		rapidFlag(name) // a flag rapid does not have panics here, not later
		out[name] = value
	}
	return out
}

// rapidFlag is the flag's value; it panics if rapid has no such flag.
func rapidFlag(name string) string {
	f := goflag.CommandLine.Lookup(name)
	if f == nil {
		panic(fmt.Sprintf("rapid flag %s is not registered", name)) // rapid renamed its flags
	}
	return f.Value.String()
}

// setRapidFlag sets the flag's value without marking it set: a flag the
// command line did not set stays unset to flag.Visit, which is how a test
// tells the user's -rapid.seed from its own (FlagSet.Set marks it, and the
// catalogue's tests then kept a random seed).
func setRapidFlag(name, value string) {
	if err := goflag.CommandLine.Lookup(name).Value.Set(value); err != nil {
		panic(fmt.Sprintf("rapid flag %s: %v", name, err)) // rapid renamed its flags
	}
}

// Overlay is base with set's values over it: a budget made of another.
func Overlay(base, set map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(set))
	maps.Copy(out, base)
	maps.Copy(out, set)
	return out
}
