package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestConcurrentFailNamesTheBrokenRule: a concurrent failure whose shrunk
// part one broken rule explains names that rule on its FAIL line; one
// without a named rule says "not linearizable" alone.
func TestConcurrentFailNamesTheBrokenRule(t *testing.T) {
	res := concurrentResult{Protocol: "split_rescue", Topology: "single", Result: "fail", Histories: 3, Seed: 2,
		Violation: "not linearizable", Broken: "rescue took e1 whose lease is live", Detail: "after Rescue(), e1 is DEAD gen=1: a rescue must not change a live lease"}
	var text bytes.Buffer
	printConcurrent(&text, res)
	if want := "split_rescue: FAIL: not linearizable: rescue took e1 whose lease is live (history 3,"; !strings.HasPrefix(text.String(), want) {
		t.Errorf("the FAIL line is %q, want it to start %q", firstLineOf(text.String()), want)
	}
	res.Broken = ""
	text.Reset()
	printConcurrent(&text, res)
	if want := "split_rescue: FAIL: not linearizable (history 3,"; !strings.HasPrefix(text.String(), want) {
		t.Errorf("the FAIL line is %q, want it to start %q", firstLineOf(text.String()), want)
	}
}
