package search

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/machine"
	"pgregory.net/rapid"
)

// A Shard is part K of N of a budget, so that N machines share one run.
//
// A run of C checks from seed S is, to rapid, the checks 0 to C-1, check i
// running from the seed S + i(i+1)/2 (rapid's findBug adds the number of
// checks so far to the seed before each one; the machine's checks are never
// invalid, so every check counts). Shard K of N runs the checks of one
// contiguous range of that sequence, from (K-1)*C/N to K*C/N-1, each from
// its own seed: the shards' seeds are disjoint, and together they are
// exactly the unsharded run's. Each check of a shard is a rapid.Check of
// one check, so a failure in a shard is reproduced alone by that check's
// seed with a budget of one check.
type Shard struct{ K, N int }

// ParseShard reads "K/N" with 1 <= K <= N.
func ParseShard(s string) (Shard, error) {
	ks, ns, ok := strings.Cut(s, "/")
	k, errK := strconv.Atoi(ks)
	n, errN := strconv.Atoi(ns)
	if !ok || errK != nil || errN != nil || strings.ContainsAny(s, "+- ") {
		return Shard{}, fmt.Errorf("shard %q: want K/N, two whole numbers such as 2/8", s)
	}
	if n < 1 || k < 1 || k > n {
		return Shard{}, fmt.Errorf("shard %q: want 1 <= K <= N", s)
	}
	return Shard{K: k, N: n}, nil
}

// Whole reports whether the shard is the whole budget (the zero Shard or 1/1).
func (s Shard) Whole() bool { return s.N <= 1 }

func (s Shard) String() string {
	if s.N == 0 {
		return "1/1"
	}
	return fmt.Sprintf("%d/%d", s.K, s.N)
}

// Range is the shard's part of a budget of checks: check indices from lo
// to hi-1. Every shard gets checks/N or one more.
func (s Shard) Range(checks int) (lo, hi int) {
	if s.Whole() {
		return 0, checks
	}
	return (s.K - 1) * checks / s.N, s.K * checks / s.N
}

// Seeds are the rapid seeds of the shard's checks of a run of checks from
// base, in order. An error when the shard would be empty.
func (s Shard) Seeds(base uint64, checks int) ([]uint64, error) {
	lo, hi := s.Range(checks)
	if lo == hi {
		return nil, fmt.Errorf("shard %s of %d checks is empty: give at least %d checks", s, checks, s.N)
	}
	var out []uint64
	for i := lo; i < hi; i++ {
		out = append(out, SeedOfCheck(base, i))
	}
	return out, nil
}

// SeedOfCheck is the seed rapid gives check i (from 0) of a run from base.
func SeedOfCheck(base uint64, i int) uint64 {
	n := uint64(i)
	return base + n*(n+1)/2 // as rapid adds, modulo 2^64
}

// MeasureSeeds is Measure over a list of seeds, one rapid.Check of one
// check each, stopping at the first failure; its Checks count every check
// run up to it.
func MeasureSeeds(name string, h *machine.Harness, check func(*rapid.T), seeds []uint64) Catch {
	return measureSeeds(name, h, check, seeds, nil)
}

// measureSeeds is MeasureSeeds under the rapid flags flags sets.
func measureSeeds(name string, h *machine.Harness, check func(*rapid.T), seeds []uint64, flags map[string]string) Catch {
	start := time.Now()
	run := 0
	var c Catch
	EachSeed(seeds, func(seed map[string]string) bool {
		before := time.Since(start)
		c = MeasureWith(name, h, check, Overlay(flags, seed))
		if c.Caught {
			c.Checks += run
			c.ToFind += before
			return false
		}
		run += c.Checks
		c.Checks = run
		return true
	})
	c.Total = time.Since(start)
	return c
}

// EachSeed calls check with the rapid flags of one check from each seed
// in turn, until check returns false.
func EachSeed(seeds []uint64, check func(flags map[string]string) (more bool)) {
	for _, s := range seeds {
		if !check(map[string]string{"rapid.checks": OneCheck(), "rapid.seed": strconv.FormatUint(s, 10)}) {
			return
		}
	}
}

// OneCheck is the value of rapid.checks that runs exactly one check: rapid
// divides its budget by 5 under -short.
func OneCheck() string {
	if testing.Short() {
		return "5"
	}
	return "1"
}
