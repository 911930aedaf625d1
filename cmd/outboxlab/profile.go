package main

import (
	"fmt"
	"io"
	"time"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/search"
	"github.com/outboxlab/outboxlab/sut"
)

// profileEntry is one property's verdict in `check --profile --json`.
type profileEntry struct {
	Property string `json:"property"`
	Verdict  string `json:"verdict"` // holds, breaks, not_declared or unknown
	// When it breaks: the rule, its shrunk counterexample (found with the
	// properties broken before it relaxed) and the command that finds it.
	Rule                string   `json:"rule,omitempty"`
	Counterexample      []string `json:"counterexample,omitempty"`
	CounterexampleSteps int      `json:"counterexample_steps,omitempty"`
	Relaxed             string   `json:"relaxed,omitempty"` // the properties relaxed while it was found
}

// profileOne is a profile of one protocol (search.Searcher.Profile) as a
// check result: fail when a property breaks or a failure of no property
// ends the profile, pass when every property holds at the budget.
func profileOne(srv *pgserver.Server, inst *sut.Instance, cfg machine.Config, f checkFlags, stderr io.Writer) checkResult {
	res := checkResult{Protocol: inst.Proto.Name, Seed: f.seed, Counterexample: []string{}, NotExercised: notExercised(inst.Proto)}
	h, done, err := startHarness(srv, inst, cfg)
	if err != nil {
		res.Result, res.Error = "error", err.Error()
		return res
	}
	defer done()
	stop := showProgress(h, inst.Proto.Name, f.checks, stderr)
	start := time.Now()
	p := search.On(h).Profile("outboxlab check --profile "+inst.Proto.Name, f.shrink)
	stop()
	checks, steps, _ := h.Stats()
	res.Checks, res.Steps, res.Seconds = checks, steps, time.Since(start).Seconds()
	res.Coverage = h.Coverage.Counts()
	res.Result = "pass"
	for _, finding := range p.Findings {
		e := profileEntry{Property: finding.Property.String(), Verdict: finding.Verdict}
		if finding.Verdict == search.Breaks {
			c := finding.Catch
			e.Rule, e.Counterexample, e.CounterexampleSteps = c.Failure.Rule, c.Program, c.Steps()
			if finding.Relaxed != 0 {
				e.Relaxed = finding.Relaxed.String()
			}
			if res.Result != "fail" {
				// The first broken property is the result's violation.
				res.Result = "fail"
				res.Violation, res.Counterexample, res.CounterexampleSteps = e.Rule, e.Counterexample, e.CounterexampleSteps
			}
		}
		res.Profile = append(res.Profile, e)
	}
	if c := p.Stopped; c != nil {
		res.Result = "fail"
		res.Violation, res.Counterexample, res.CounterexampleSteps = "", c.Program, c.Steps()
		if c.Failure != nil {
			res.Violation = c.Failure.Rule
		} else {
			res.Result, res.Error = "error", firstLine(c.Report)
		}
		res.ProfileStopped = res.Violation
	}
	return res
}

// printProfile writes a profile as a table, each broken property with its
// counterexample.
func printProfile(w io.Writer, r checkResult) {
	fmt.Fprintf(w, "%s: profile (%d checks in all, %.1fs, seed %d)\n", r.Protocol, r.Checks, r.Seconds, r.Seed)
	marks := map[string]string{search.Holds: "✓", search.Breaks: "✗", search.NotDeclared: "-", search.Unknown: "?"}
	for _, e := range r.Profile {
		line := fmt.Sprintf("  %s %-18s %s", marks[e.Verdict], e.Property, e.Verdict)
		if e.Rule != "" {
			line += ": " + e.Rule
		}
		fmt.Fprintln(w, line)
		for _, step := range e.Counterexample {
			fmt.Fprintln(w, "      "+step)
		}
	}
	if r.ProfileStopped != "" {
		fmt.Fprintf(w, "  the profile stopped at a failure of no property: %s\n", r.ProfileStopped)
		for _, step := range r.Counterexample {
			fmt.Fprintln(w, "      "+step)
		}
	}
	if r.Error != "" {
		fmt.Fprintf(w, "  ERROR: %s\n", r.Error)
	}
}
