package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestBenchOnlyBadInput: `bench --only` refuses a part it does not have, a
// history count out of range and a protocol, each with exit status 2 and
// a message naming the flag, before any server is started.
func TestBenchOnlyBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--only", "machine"}, `--only "machine"`},
		{[]string{"bench", "--only=concurrent", "--histories", "0"}, "--histories 0"},
		{[]string{"bench", "-only", "concurrent", "--histories", "5000"}, "--histories 5000"},
		{[]string{"bench", "--only", "concurrent", "leased"}, "takes no protocol"},
		{[]string{"bench", "--only", "concurrent", "--bogus"}, "flag provided but not defined"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(c.args, &stdout, &stderr); code != exitBad || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr.String(), exitBad, c.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"bench", "--only", "concurrent", "-h"}, &stdout, &stderr); code != exitPass || !strings.Contains(stdout.String(), "usage: outboxlab bench --only concurrent") {
		t.Errorf("-h: exit %d, stdout %q", code, stdout.String())
	}
}

// TestBenchOnlyJSON runs `bench --only concurrent --json` on two histories
// and checks that every figure is there and measured: both rates, the check
// time, the CPU per operation of this process, of its worker processes
// (read from /proc: a zero would mean the children were not found) and of
// the server's backends when the server is this machine's, and both sides'
// statements. It times nothing.
func TestBenchOnlyJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"bench", "--only", "concurrent", "--json", "--histories", "2"}, &stdout, &stderr); code != exitPass {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	var got struct {
		Concurrent float64        `json:"concurrent_ops_per_s"`
		Raw        float64        `json:"raw_ops_per_s"`
		Linearize  float64        `json:"linearize_ms_per_1k_ops"`
		Ratio      float64        `json:"ratio"`
		CPU        float64        `json:"cpu_us_per_op"`
		WorkerCPU  float64        `json:"worker_cpu_us_per_op"`
		RawCPU     float64        `json:"raw_cpu_us_per_op"`
		ServerCPU  float64        `json:"server_cpu_us_per_op"`
		RawServer  float64        `json:"raw_server_cpu_us_per_op"`
		Mix        map[string]int `json:"mix"`
		RawMix     map[string]int `json:"raw_mix"`
		Machine    struct {
			Server string `json:"server"`
		} `json:"machine"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, stdout.String())
	}
	for name, v := range map[string]float64{"concurrent_ops_per_s": got.Concurrent, "raw_ops_per_s": got.Raw,
		"linearize_ms_per_1k_ops": got.Linearize, "ratio": got.Ratio, "cpu_us_per_op": got.CPU,
		"worker_cpu_us_per_op": got.WorkerCPU, "raw_cpu_us_per_op": got.RawCPU} {
		if !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("%s = %v, want a positive number", name, v)
		}
	}
	if !(got.WorkerCPU < got.CPU) {
		t.Errorf("worker_cpu_us_per_op %v is not a part of cpu_us_per_op %v", got.WorkerCPU, got.CPU)
	}
	if got.Machine.Server == "local" && !(got.ServerCPU > 0 && got.RawServer > 0) {
		t.Errorf("a local server, and its CPU per operation is %v (driver) and %v (raw)", got.ServerCPU, got.RawServer)
	}
	for side, mix := range map[string]map[string]int{"mix": got.Mix, "raw_mix": got.RawMix} {
		if mix["Claim empty"]+mix["Claim claimed"] == 0 || mix["Complete applied"]+mix["Complete rejected"] == 0 || mix["Read"] == 0 {
			t.Errorf("%s has no claim, complete or read: %v", side, mix)
		}
	}
}
