package search

import (
	goflag "flag"
	"fmt"
)

// rapid reads its budget and seed from its flags when a check starts, so
// a search sets them around each check. Every change goes through
// SetRapidFlags, which hands back the way to put them back.

// SetRapidFlags sets rapid's flags to set and returns what restores them
// as they were.
func SetRapidFlags(set map[string]string) (restore func()) {
	saved := make(map[string]string, len(set))
	for name, value := range set {
		saved[name] = rapidFlag(name)
		setRapidFlag(name, value)
	}
	return func() {
		for name, value := range saved {
			setRapidFlag(name, value)
		}
	}
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
