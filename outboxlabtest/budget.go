package outboxlabtest

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/search"
)

// budget is a run's budget once the options, rapid's flags and variables
// and -short have had their say.
type budget struct {
	checks int // as rapid runs them: under -short, already divided by 5
	steps  int // rapid.steps (rapid halves it under -short itself)
	seed   uint64
	shard  search.Shard
	shrink time.Duration // 0: the search's default
}

// explicitFlags are the rapid flags set on the command line, read once
// before this package sets any of them (flag.Visit cannot tell those
// apart afterwards).
var explicitFlags = sync.OnceValue(func() map[string]bool {
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
})

// fromUser reports whether the user chose rapid's flag name, on the
// command line or through its RAPID_ variable, and its value: the command
// line wins, as in rapid (which reads the variable once, at start-up; it
// is read again here so that a test may set it).
func fromUser(name, env string) (string, bool) {
	f := flag.Lookup(name)
	if f == nil {
		return "", false
	}
	if explicitFlags()[name] {
		return f.Value.String(), true
	}
	if v, ok := os.LookupEnv(env); ok {
		return v, true
	}
	return f.Value.String(), false
}

func (o options) budget() (budget, error) {
	b := budget{checks: o.checks, steps: o.steps, seed: o.seed, shard: o.shard}
	var err error
	if b.checks, err = intFlag("rapid.checks", "RAPID_CHECKS", o.checks); err != nil {
		return b, err
	}
	if testing.Short() {
		b.checks = max(1, b.checks/5)
	}
	if b.steps, err = intFlag("rapid.steps", "RAPID_STEPS", o.steps); err != nil {
		return b, err
	}
	if v, ok := fromUser("rapid.shrinktime", "RAPID_SHRINKTIME"); ok {
		if b.shrink, err = time.ParseDuration(v); err != nil {
			return b, fmt.Errorf("rapid.shrinktime %q: %w", v, err)
		}
	}
	seedChosen := o.seed != 0
	if v, ok := fromUser("rapid.seed", "RAPID_SEED"); ok && v != "0" {
		if b.seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			return b, fmt.Errorf("rapid.seed %q: not a seed", v)
		}
		seedChosen = true
	}
	if s, ok := os.LookupEnv("OUTBOXLAB_SHARD"); ok {
		if b.shard, err = search.ParseShard(s); err != nil {
			return b, fmt.Errorf("OUTBOXLAB_SHARD: %w", err)
		}
	} else if !o.shard.Whole() {
		if _, err := search.ParseShard(o.shard.String()); err != nil {
			return b, fmt.Errorf("outboxlabtest.Shard: %w", err)
		}
	}
	if !b.shard.Whole() && !seedChosen {
		return b, fmt.Errorf("shard %s needs a seed (RAPID_SEED, -rapid.seed or outboxlabtest.Seed): every shard of a run starts from the same one", b.shard)
	}
	if b.seed == 0 {
		b.seed = rand.Uint64N(1 << 53)
	}
	return b, nil
}

// intFlag is rapid's flag when the user set it, else the option, else the
// flag's default; at least 1.
func intFlag(name, env string, option int) (int, error) {
	v, chosen := fromUser(name, env)
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%s %q: not a number", name, v)
	case !chosen && option != 0:
		n = option
	}
	if n < 1 {
		return 0, fmt.Errorf("a budget of %d for %s: want at least 1", n, name)
	}
	return n, nil
}
