package search

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestShardsSplitTheSeeds: the N shards of a run of C checks from seed S
// run disjoint sets of seeds whose union is exactly the unsharded run's.
// What a check ran from is observed, not computed: each check records
// rapid's first draw, a function of its seed, so the test holds the shard
// arithmetic to what rapid itself does. The mutant linearSeeds (check i
// from S+i, the obvious guess at rapid's sequence) must fail the same
// comparison.
func TestShardsSplitTheSeeds(t *testing.T) {
	const base, checks = 4721420954342791, 23
	whole := wholeRunDraws(t, base, checks)
	if len(whole) != checks {
		t.Fatalf("the unsharded run drew %d distinct first values, want %d", len(whole), checks)
	}
	for _, n := range []int{1, 2, 3, 7, checks} {
		var union []uint64
		var seeds []uint64
		for k := 1; k <= n; k++ {
			s, err := Shard{K: k, N: n}.Seeds(base, checks)
			if err != nil {
				t.Fatalf("shard %d/%d: %v", k, n, err)
			}
			seeds = append(seeds, s...)
			union = append(union, drawsOf(s)...)
		}
		if dup := firstDuplicate(seeds); dup != nil {
			t.Fatalf("N=%d: seed %d is in two shards", n, *dup)
		}
		if !sameSet(union, whole) {
			t.Fatalf("N=%d: the shards' checks drew %v, the unsharded run %v", n, sorted(union), sorted(whole))
		}
	}
	if sameSet(drawsOf(linearSeeds(base, checks)), whole) {
		t.Fatal("mutant linearSeeds (check i from base+i) matched the unsharded run: the comparison cannot fail")
	}
}

func linearSeeds(base uint64, checks int) []uint64 {
	var out []uint64
	for i := range checks {
		out = append(out, base+uint64(i))
	}
	return out
}

// wholeRunDraws runs rapid as an unsharded run does: one rapid.Check of
// checks checks from base.
func wholeRunDraws(t *testing.T, base uint64, checks int) []uint64 {
	budget := checks
	if testing.Short() {
		budget *= 5 // as verdict.Run does: rapid divides by 5 under -short
	}
	var draws []uint64
	tb := NewRecordingTB("whole")
	tb.Flags = map[string]string{"rapid.seed": strconv.FormatUint(base, 10), "rapid.checks": strconv.Itoa(budget)}
	tb.RunProperty(func(t *rapid.T) { draws = append(draws, rapid.Uint64().Draw(t, "x")) })
	return draws
}

// drawsOf runs one check from each seed, as a shard does (EachSeed).
func drawsOf(seeds []uint64) []uint64 {
	var draws []uint64
	EachSeed(seeds, func(flags map[string]string) bool {
		tb := NewRecordingTB("shard")
		tb.Flags = flags
		tb.RunProperty(func(t *rapid.T) { draws = append(draws, rapid.Uint64().Draw(t, "x")) })
		return true
	})
	return draws
}

func sameSet(a, b []uint64) bool { return slices.Equal(sorted(a), sorted(b)) }

func sorted(a []uint64) []uint64 { a = slices.Clone(a); slices.Sort(a); return a }

func firstDuplicate(a []uint64) *uint64 {
	seen := map[uint64]bool{}
	for _, v := range a {
		if seen[v] {
			return &v
		}
		seen[v] = true
	}
	return nil
}

// TestShardRanges: every shard gets checks/N or one more, the ranges
// follow each other, and a bad K/N or an empty shard is refused.
func TestShardRanges(t *testing.T) {
	for _, c := range []struct{ checks, n int }{{100, 8}, {10, 3}, {5, 5}, {7, 1}} {
		next := 0
		for k := 1; k <= c.n; k++ {
			lo, hi := Shard{K: k, N: c.n}.Range(c.checks)
			if lo != next || hi-lo < c.checks/c.n || hi-lo > c.checks/c.n+1 {
				t.Errorf("%d checks, shard %d/%d: range [%d,%d) after %d", c.checks, k, c.n, lo, hi, next)
			}
			next = hi
		}
		if next != c.checks {
			t.Errorf("%d checks in %d shards cover %d", c.checks, c.n, next)
		}
	}
	for _, bad := range []string{"", "1", "0/2", "3/2", "1/0", "-1/2", "1/-2", "a/b", "1/2/3", " 1/2", "+1/2"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
	if s, err := ParseShard("3/8"); err != nil || s != (Shard{K: 3, N: 8}) {
		t.Errorf("ParseShard(3/8) = %v, %v", s, err)
	}
	if _, err := (Shard{K: 3, N: 4}).Seeds(1, 2); err == nil {
		t.Error("shard 3/4 of 2 checks: no error for an empty shard")
	}
}

// TestFailingSeedIsRapids: the seed FailingSeed computes for the failing
// check is the one rapid's own report names for it, and from it alone the
// check fails again at once.
func TestFailingSeedIsRapids(t *testing.T) {
	const base, checks = 4721420954342791, 12
	draws := wholeRunDraws(t, base, checks)
	tried := 0
	for _, k := range []int{1, 2, 7, 9, checks} {
		bad := draws[k-1]
		if slices.Contains(draws[:k-1], bad) {
			continue // rapid's small values come back: an earlier check would fail first
		}
		tried++
		run := 0
		failing := func(t *rapid.T) {
			run++
			if rapid.Uint64().Draw(t, "x") == bad {
				t.Fatalf("check %d drew the bad value", run)
			}
		}
		tb := NewRecordingTB("failing")
		budget := checks
		if testing.Short() {
			budget *= 5 // rapid divides by 5 under -short
		}
		tb.Flags = map[string]string{"rapid.seed": strconv.FormatUint(base, 10), "rapid.checks": strconv.Itoa(budget), "rapid.shrinktime": "0s", "rapid.nofailfile": "true"}
		if tb.RunProperty(failing) {
			t.Fatalf("k=%d: the property passed", k)
		}
		got := Searcher{}.FailingSeed(Catch{Checks: k}, base)
		if want := "-rapid.seed=" + strconv.FormatUint(got, 10); !strings.Contains(tb.Errors(), want) {
			t.Fatalf("k=%d: FailingSeed gave %d; rapid's report names another:\n%s", k, got, tb.Errors())
		}
		alone := NewRecordingTB("alone")
		alone.Flags = map[string]string{"rapid.seed": strconv.FormatUint(got, 10), "rapid.checks": OneCheck(), "rapid.shrinktime": "0s", "rapid.nofailfile": "true"}
		run = 0
		if alone.RunProperty(failing) || run < 1 {
			t.Fatalf("k=%d: the check from seed %d alone passed", k, got)
		}
	}
	if tried < 3 {
		t.Fatalf("only %d failing checks had a first draw of their own: %v", tried, draws)
	}
	seeds := []uint64{11, 22, 33}
	if got := (Searcher{Seeds: seeds}).FailingSeed(Catch{Checks: 2}, base); got != 22 {
		t.Errorf("a shard's second check failed: FailingSeed %d, want its seed 22", got)
	}
}
