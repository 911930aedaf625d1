package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/relay"
)

// TestBrokerBadInputExitsTwo: relay mode reports bad input with exit
// status 2 before anything runs.
func TestBrokerBadInputExitsTwo(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "--broker", "--relay-variant", "nope", "leased"}, `unknown relay variant "nope"`},
		{[]string{"check", "--broker", "--profile", "leased"}, "--profile has no relay mode"},
		{[]string{"check", "--broker", "testdata/bad/syntax_error.sql"}, "testdata/bad/syntax_error.sql:"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tt.args, &stdout, &stderr); code != exitBad {
			t.Errorf("%v: exit %d, want 2; stderr %s", tt.args, code, stderr.String())
		}
		if !strings.Contains(stderr.String(), tt.want) || stdout.Len() != 0 {
			t.Errorf("%v: stderr %q, want %q and no output", tt.args, stderr.String(), tt.want)
		}
	}
}

// TestBrokerVariantFailsWithJSON: a broken relay is a counterexample (exit
// status 1) in --json, with the rule it breaks, the broker it ran on, the
// relay coverage and a reproduce line in relay mode.
func TestBrokerVariantFailsWithJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"check", "--broker", "--json", "--checks", "3", "--seed", "1", "--shrink-time", "2s",
		"--relay-variant", "key_with_generation", "leased"}, &stdout, &stderr)
	if code != exitFail {
		t.Fatalf("exit %d, want 1; stdout %s stderr %s", code, stdout.String(), stderr.String())
	}
	var res brokerResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if res.Result != "fail" || res.Violation != relay.RuleSameEventID || res.Broker != "embedded kfake" || res.Variant != "key_with_generation" {
		t.Errorf("result %+v", res)
	}
	if _, ok := res.Coverage[relay.ClassPublished]; !ok || len(res.Counterexample) == 0 {
		t.Errorf("coverage %v, counterexample %v", res.Coverage, res.Counterexample)
	}
	if !strings.HasPrefix(res.Reproduce, "outboxlab check --broker --checks 1 --seed ") || !strings.Contains(res.Reproduce, "--relay-variant key_with_generation") {
		t.Errorf("reproduce %q", res.Reproduce)
	}
}
