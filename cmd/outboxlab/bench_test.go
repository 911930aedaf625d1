package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/bench"
)

// TestBenchJSONKeys runs `outboxlab bench --json --quick`, every
// measurement once or a few times, and checks that the object has every
// figure, each a finite number, on a local cluster the failover and crash
// cycles' too (each run once on a deployment of its own): so the command
// cannot rot between the nightly runs that use it. It times nothing.
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
		"baseline_find_ms", "baseline_shrink_ms", "kill_cycle_ms", "worker_start_cpu_ms",
		"concurrent_ops_per_s", "raw_ops_per_s", "linearize_ms_per_1k_ops"}
	if m, _ := got["machine"].(map[string]any); m["server"] == "local" {
		keys = append(keys, "failover_cycle_ms", "crash_cycle_ms", "round_trips_per_step", "state_read_share") // taken on a local cluster only
	}
	if _, ok := got["external_step_us"]; ok {
		keys = append(keys, "external_step_us") // where the checkout's examples/python worker and /usr/bin/python3 are
	}
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
	if m, _ := got["machine"].(map[string]any); m["cpus"] == nil || m["postgres"] == nil || m["worker"] != "outboxlab-worker" {
		t.Errorf("machine = %v, want cpus, postgres and the worker executable outboxlab-worker", got["machine"])
	}
	if len(got) != len(keys)+2 {
		t.Errorf("%d keys, want exactly %d: %v", len(got), len(keys)+2, got)
	}
}

// TestBenchTextNamesTheTopologyFigures: the table has the failover and
// crash cycles when the server is a local cluster, and says they were not
// measured on another.
func TestBenchTextNamesTheTopologyFigures(t *testing.T) {
	f := bench.Figures{FailoverCycleMS: 2100, CrashCycleMS: 150, RoundTripsPerStep: 2.125, StateReadShare: 0.48, ChecksPerS: map[string]float64{"1": 40}, Machine: bench.Machine{Server: "local"}}
	var out bytes.Buffer
	printFigures(&out, f)
	for _, want := range []string{"failover_cycle_ms        2100.000 ms", "crash_cycle_ms           150.000 ms", "round_trips_per_step     2.125 ", "state_read_share         0.480 "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("on a local cluster the table lacks %q:\n%s", want, out.String())
		}
	}
	f.Machine.Server, f.FailoverCycleMS, f.CrashCycleMS = "env", 0, 0
	out.Reset()
	printFigures(&out, f)
	if !strings.Contains(out.String(), "failover_cycle_ms, crash_cycle_ms, round_trips_per_step, state_read_share: not measured") || strings.Contains(out.String(), "failover_cycle_ms  ") || strings.Contains(out.String(), "round_trips_per_step  ") {
		t.Errorf("on a user's server the table does not say the topology figures were not measured:\n%s", out.String())
	}
}
