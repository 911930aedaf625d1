package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestShardFailureReproducesAlone: a counterexample found in shard 2 of 3
// names the seed of its own check, and the printed reproduce line finds
// the same violation at its first check, without the shard.
func TestShardFailureReproducesAlone(t *testing.T) {
	res := checkJSON(t, "--seed", "42", "--checks", "9", "--shard", "2/3", "--faults=false", "--shrink-time", "1s", "baseline")
	if res.Result != "fail" || res.Shard != "2/3" {
		t.Fatalf("baseline, shard 2/3: %s (shard %q), want a counterexample in the shard", res.Result, res.Shard)
	}
	if strings.Contains(res.Reproduce, "--shard") || !strings.Contains(res.Reproduce, "--checks 1 ") {
		t.Fatalf("reproduce line %q: want one check from the failing seed, no shard", res.Reproduce)
	}
	args := append([]string{"--shrink-time", "1s"}, strings.Fields(strings.TrimPrefix(res.Reproduce, "outboxlab check "))...)
	replay := checkJSON(t, args...)
	if replay.Result != "fail" || replay.Violation != res.Violation || replay.Checks != 1 {
		t.Fatalf("reproduce line %q gave %s %q after %d checks, want %q at the first check",
			res.Reproduce, replay.Result, replay.Violation, replay.Checks, res.Violation)
	}
}

// TestBadShardExitsTwo: a malformed or impossible --shard is bad input,
// reported before anything runs.
func TestBadShardExitsTwo(t *testing.T) {
	for _, args := range [][]string{
		{"--shard", "0/4", "--seed", "1"},
		{"--shard", "5/4", "--seed", "1"},
		{"--shard", "1-4", "--seed", "1"},
		{"--shard", "1/4"},                                 // no seed: the shards would not share a run
		{"--shard", "1/4", "--seed", "1", "--checks", "3"}, // an empty shard: checks 0 to -1
	} {
		var stdout, stderr bytes.Buffer
		code := run(append(append([]string{"check"}, args...), "leased"), &stdout, &stderr)
		if code != exitBad || !strings.Contains(stderr.String(), "shard") || stdout.Len() != 0 {
			t.Errorf("check %v: exit %d, stderr %q, stdout %q; want exit 2 and a message about the shard", args, code, stderr.String(), stdout.String())
		}
	}
}
