package verdict

import (
	"fmt"
	"io"

	"github.com/outboxlab/outboxlab/search"
)

// profile is a profile of one protocol (search.Searcher.Profile) as a
// check result: fail when a property breaks or a failure of no property
// ends the profile, pass when every property holds at the budget.
func profile(s search.Searcher, r Run, res Result) Result {
	p := s.Profile("outboxlab check --profile "+s.Inst.Proto.Name, r.Shrink)
	res.Checks, res.Steps, _ = s.Stats()
	res.Coverage = s.Coverage.Counts()
	res.Result = Pass
	for _, finding := range p.Findings {
		e := ProfileEntry{Property: finding.Property.String(), Verdict: finding.Verdict}
		if finding.Verdict == search.Breaks {
			c := finding.Catch
			e.Rule, e.Counterexample, e.CounterexampleSteps = c.Failure.Rule, c.Program, c.Steps()
			e.Program = programOf(c)
			if finding.Relaxed != 0 {
				e.Relaxed = finding.Relaxed.String()
			}
			if res.Result != Fail {
				// The first broken property is the result's violation; a
				// replay relaxes what its search relaxed.
				res.Result = Fail
				res.Violation, res.Counterexample, res.CounterexampleSteps = e.Rule, e.Counterexample, e.CounterexampleSteps
				replayable(&res, s, r, e.Program, finding.Relaxed)
			}
		}
		res.Profile = append(res.Profile, e)
	}
	if c := p.Stopped; c != nil {
		res.Result = Fail
		res.Violation, res.Counterexample, res.CounterexampleSteps = "", c.Program, c.Steps()
		if c.Failure != nil {
			res.Violation = c.Failure.Rule
			if res.Program == nil {
				replayable(&res, s, r, programOf(*c), 0)
			}
		} else {
			res.Result, res.Error = Error, firstLine(c.Report)
		}
		res.ProfileStopped = res.Violation
	}
	return res
}

// PrintProfile writes a profile as a table, each broken property with its
// counterexample.
func PrintProfile(w io.Writer, r Result) {
	fmt.Fprintf(w, "%s: profile (%d checks in all, %.1fs, seed %d)\n", Label(r.Protocol, r.Topology), r.Checks, r.Seconds, r.Seed)
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
