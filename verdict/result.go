// Package verdict runs one protocol's search the way `outboxlab check` and
// outboxlabtest.Check both run it (a check, or a profile with --profile),
// and gives its verdict as the JSON object `check --json` prints. The
// object is a stable schema: docs/json.md lists every field, and
// TestResultSchema fails when a field changes without the document.
package verdict

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
)

// Results of one protocol, the values of Result.Result.
const (
	Pass         = "pass"
	Fail         = "fail"
	Inconclusive = "inconclusive"
	Error        = "error"
)

// Result is one protocol's verdict, the JSON object `check --json` prints
// (one per protocol, one per line).
type Result struct {
	Protocol string `json:"protocol"`
	// Topology is where the protocol's server ran (pgserver.Topologies):
	// "single" unless check --topology or outboxlabtest.Topology chose
	// another.
	Topology       string   `json:"topology"`
	Result         string   `json:"result"` // pass, fail, inconclusive or error
	Seed           uint64   `json:"seed"`
	Shard          string   `json:"shard,omitempty"` // K/N when the run was one shard of a budget
	Checks         int      `json:"checks"`
	Steps          int      `json:"steps"`
	Seconds        float64  `json:"seconds"`
	Violation      string   `json:"violation"`
	Counterexample []string `json:"counterexample"`
	// CounterexampleSteps counts the shrunk program's steps, the drain's
	// included (machine.CountSteps).
	CounterexampleSteps int `json:"counterexample_steps,omitempty"`
	// Program is the counterexample as a value (what `outboxlab replay`
	// runs), Settings what the check ran with besides the topology, and
	// Replay the command that replays it.
	Program      *Program       `json:"program,omitempty"`
	Settings     *Settings      `json:"settings,omitempty"`
	Replay       string         `json:"replay,omitempty"`
	Reproduce    string         `json:"reproduce,omitempty"`
	Coverage     map[string]int `json:"coverage"`
	Uncovered    []string       `json:"uncovered,omitempty"`     // required classes never reached: the result is inconclusive
	NotExercised []string       `json:"not_exercised,omitempty"` // what this protocol's sections leave out of every check
	Error        string         `json:"error,omitempty"`
	// Profile is set by --profile: a verdict per property. ProfileStopped
	// names the failure of no property that ended it, if one did.
	Profile        []ProfileEntry `json:"profile,omitempty"`
	ProfileStopped string         `json:"profile_stopped,omitempty"`
}

// ProfileEntry is one property's verdict in `check --profile --json`.
type ProfileEntry struct {
	Property string `json:"property"`
	Verdict  string `json:"verdict"` // holds, breaks, not_declared or unknown
	// When it breaks: the rule, its shrunk counterexample (found with the
	// properties broken before it relaxed) and the command that finds it.
	Rule                string   `json:"rule,omitempty"`
	Counterexample      []string `json:"counterexample,omitempty"`
	CounterexampleSteps int      `json:"counterexample_steps,omitempty"`
	Relaxed             string   `json:"relaxed,omitempty"` // the properties relaxed while it was found
	// Program is the counterexample as a value. A replay runs it without
	// the relaxed properties, so it may break one of those first.
	Program *Program `json:"program,omitempty"`
}

// NotExercised says what a protocol's sections leave out of every check,
// so that a pass is read for what it covers.
func NotExercised(p *sut.Protocol) []string {
	var out []string
	if p.SessionLease {
		// Nothing to age or renew: the lease lasts as long as its session.
		return []string{"claim transactions and split steps: a session lease (lease=session) is taken by a claim statement on its own, and ends with its session"}
	}
	if !p.Has(sut.Age) {
		out = append(out, "lease length and renewal effect: the protocol has no age section (and no outbox_lab table for the default)")
	}
	if !p.Has(sut.Renew) {
		out = append(out, "renewal: the protocol has no renew section")
	}
	return out
}

// Label is how a result line names the protocol: with its topology in
// brackets when that is not single (leased [async-standby]).
func Label(protocol, topology string) string {
	if topology == "" || topology == string(pgserver.Single) {
		return protocol
	}
	return protocol + " [" + topology + "]"
}

// Print writes a check's result as `outboxlab check` prints it: the
// verdict, a counterexample with its rule and reproduce line, coverage.
func Print(w io.Writer, r Result) {
	name := Label(r.Protocol, r.Topology)
	shard := ""
	if r.Shard != "" {
		shard = ", shard " + r.Shard
	}
	switch r.Result {
	case Pass:
		fmt.Fprintf(w, "%s: pass (%d checks, %d steps, %.1fs, seed %d%s)\n", name, r.Checks, r.Steps, r.Seconds, r.Seed, shard)
	case Inconclusive:
		fmt.Fprintf(w, "%s: INCONCLUSIVE: no counterexample, but the run never exercised %s (%d checks, %d steps, seed %d%s): raise --checks or --steps\n",
			name, strings.Join(r.Uncovered, ", "), r.Checks, r.Steps, r.Seed, shard)
	case Fail:
		fmt.Fprintf(w, "%s: FAIL: %s (found at check %d, %.1fs including shrinking)\n", name, r.Violation, r.Checks, r.Seconds)
		fmt.Fprintln(w, "  counterexample (shrunk):")
		for _, line := range r.Counterexample {
			fmt.Fprintln(w, "    "+line)
		}
		fmt.Fprintf(w, "  broken invariant: %s\n", r.Violation)
		if r.Replay != "" {
			fmt.Fprintf(w, "  reproduce: %s   (FILE: the counterexample above, or this check's --json)\n", r.Replay)
			fmt.Fprintf(w, "  reproduce from the seed: %s\n", r.Reproduce)
		} else {
			fmt.Fprintf(w, "  reproduce: %s\n", r.Reproduce)
		}
	default:
		fmt.Fprintf(w, "%s: ERROR: %s\n", name, r.Error)
		return
	}
	fmt.Fprintln(w, "  coverage:")
	for _, k := range sortedKeys(r.Coverage) {
		fmt.Fprintf(w, "    %-24s %7d\n", k, r.Coverage[k])
	}
	for _, n := range r.NotExercised {
		fmt.Fprintf(w, "  not exercised: %s\n", n)
	}
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
