package search

import (
	"time"

	"github.com/outboxlab/outboxlab/model"
)

// A profile is a verdict per property rather than one pass or fail. It
// searches as a check does; when it finds a counterexample it names the
// property the broken rule belongs to (model.PropertyOf), keeps that
// counterexample, relaxes the property (the model then allows both what it
// demands and what it forbids) and searches again, until a search passes.
// One early failure thus hides nothing: a library that fences correctly
// but lets an expired owner finish reads as exactly that.

// Verdicts of one property in a profile.
const (
	Holds       = "holds"        // no counterexample with the broken ones relaxed
	Breaks      = "breaks"       // its own shrunk counterexample is in the finding
	NotDeclared = "not_declared" // the attempt budget of a protocol without max_attempts
	Unknown     = "unknown"      // a failure of no property ended the profile first
)

// Finding is one property's verdict.
type Finding struct {
	Property model.Property
	Verdict  string
	Catch    Catch          // when it breaks: the counterexample
	Relaxed  model.Property // when it breaks: the properties relaxed while it was found
}

// Profile is every property's verdict, in model.Properties order. Stopped
// is set when the last search failed under a rule of no property (a server
// error, a result the format forbids, a lost event, a generation rule):
// the protocol fails in a way of its own, and the properties not yet
// broken are unknown.
type Profile struct {
	Findings []Finding
	Stopped  *Catch
	Searches int
}

// Broken is the set of the properties that break.
func (p Profile) Broken() model.Property {
	var out model.Property
	for _, f := range p.Findings {
		if f.Verdict == Breaks {
			out |= f.Property
		}
	}
	return out
}

// Profile runs the searches on the harness, each with the properties found
// broken so far relaxed (it sets the harness's Cfg.Relax and Cfg.Strict,
// and restores them).
func (h Searcher) Profile(name string, shrink time.Duration) Profile {
	saved, strict := h.Cfg.Relax, h.Cfg.Strict
	defer func() { h.Cfg.Relax, h.Cfg.Strict = saved, strict }()
	// Every property, strict_expiry too, whatever the protocol declares: a
	// protocol with policy=lenient then reads as breaking strict_expiry,
	// which is what it allows.
	h.Cfg.Strict = true
	declared := h.Inst.Proto.MaxAttempts > 0
	found := map[model.Property]Catch{}
	relaxedAt := map[model.Property]model.Property{}
	var relaxed model.Property
	var out Profile
	for out.Searches < len(model.Properties)+1 {
		h.Cfg.Relax = relaxed
		out.Searches++
		c := h.Search(name, shrink)
		if !c.Caught {
			break
		}
		prop := model.Property(0)
		if c.Failure != nil {
			prop = model.PropertyOf(c.Failure.Rule, c.Failure.Detail)
		}
		if prop == 0 || relaxed&prop != 0 {
			// A failure no relaxation covers (or that relaxing its
			// property did not remove): the profile ends here.
			stopped := c
			out.Stopped = &stopped
			break
		}
		found[prop], relaxedAt[prop] = c, relaxed
		relaxed |= prop
	}
	for _, prop := range model.Properties {
		f := Finding{Property: prop, Verdict: Holds}
		switch c, broke := found[prop]; {
		case broke:
			f.Verdict, f.Catch, f.Relaxed = Breaks, c, relaxedAt[prop]
		case out.Stopped != nil:
			f.Verdict = Unknown
		case prop == model.AttemptBudget && !declared:
			f.Verdict = NotDeclared
		}
		out.Findings = append(out.Findings, f)
	}
	return out
}
