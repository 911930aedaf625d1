package main

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// TestBenchJSONKeys runs `outboxlab bench --json --quick`, every
// measurement once or a few times, and checks that the object has every
// figure, each a finite number: so the command cannot rot between the
// nightly runs that use it. It times nothing.
func TestBenchJSONKeys(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"bench", "--json", "--quick"}, &stdout, &stderr); code != exitPass {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	var got map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, stdout.String())
	}
	keys := []string{"sql_floor_us", "step_us", "sql_share", "reset_us", "schema_reset_us",
		"baseline_find_ms", "baseline_shrink_ms", "kill_cycle_ms",
		"concurrent_ops_per_s", "raw_ops_per_s", "linearize_ms_per_1k_ops"}
	for _, k := range keys {
		v, ok := got[k].(float64)
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Errorf("%s = %v, want a finite number", k, got[k])
		}
	}
	rates, _ := got["checks_per_s"].(map[string]any)
	for _, p := range []string{"1", "2"} {
		if v, ok := rates[p].(float64); !ok || !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("checks_per_s[%s] = %v, want a positive number", p, rates[p])
		}
	}
	if m, _ := got["machine"].(map[string]any); m["cpus"] == nil || m["postgres"] == nil {
		t.Errorf("machine = %v, want cpus and postgres", got["machine"])
	}
	if len(got) != len(keys)+2 {
		t.Errorf("%d keys, want exactly %d: %v", len(got), len(keys)+2, got)
	}
}
