package report

import (
	"slices"
	"strings"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/model"
)

// page is what the template draws: the trace laid out as a table whose
// columns are the lanes and then the events, one line a step.
type page struct {
	Protocol  string
	Policy    string
	Reproduce string
	Rule      string // "" when the replay held
	Detail    string
	Lanes     []string
	Events    []string
	Lines     []line
	After     bool // the violation broke after the last step
	Program   string
	Steps     int
	// NotReplayed says why the page has no rows (the trace was read from
	// the printed program); "" for a replay.
	NotReplayed string
}

// line is one step of the page (or the setup).
type line struct {
	N         int
	Setup     bool
	DrainFrom bool // the drain begins at this step
	Lane      int  // the column of the step's actor
	// LaneStates are the css classes of each lane after the step: paused,
	// dead, intx (an open claim transaction), space-separated.
	LaneStates []string
	Op         string
	Got        string
	Expected   string // the model's outcomes, " | " between them
	Agrees     bool   // what the system returned is one of them
	Same       bool   // it is the only one
	Fault      string
	WaitingOn  string
	Drain      bool
	Rows       []cell
	Rule       string // set on the violating step
	Detail     string
	Note       string // why the model's rows of the violating step are from before it
}

// cell is one event's row after a step.
type cell struct {
	Row       machine.TraceRow // the model's row
	InModel   bool             // the model has the row (a deleted or unknown one it has not)
	Persisted string           // the database's row, set only where it is not the model's
	Changed   bool             // the model's row is not what it was a step before
}

// Status is the row's css class: its status in lower case, "none" without a row.
func (c cell) Status() string {
	if !c.InModel {
		return "none"
	}
	return strings.ToLower(string(c.Row.Status))
}

// lanes are the workers in order, then the other actors the trace has.
func lanes(t *machine.Trace) []string {
	out := slices.Clone(t.Workers)
	for _, actor := range []string{machine.ActorFixture, machine.ActorRescuer, machine.ActorServer} {
		if actor == machine.ActorFixture || slices.ContainsFunc(t.Steps, func(s machine.TraceStep) bool { return s.Actor == actor }) {
			out = append(out, actor)
		}
	}
	for _, s := range t.Steps { // a worker the setup did not name (a drain's respawn cannot add one, but be safe)
		if !slices.Contains(out, s.Actor) {
			out = append(out, s.Actor)
		}
	}
	return out
}

// events are every event any step shows, in the order they first appear.
func events(t *machine.Trace) []string {
	out := slices.Clone(t.Events)
	add := func(rows []machine.TraceRow) {
		for _, r := range rows {
			if !slices.Contains(out, r.Event) {
				out = append(out, r.Event)
			}
		}
	}
	add(t.Setup.Model)
	for _, s := range t.Steps {
		add(s.Model)
		add(s.Persisted)
	}
	return out
}

func layout(t *machine.Trace) page {
	p := page{Protocol: t.Protocol, Policy: t.Policy, Reproduce: t.Reproduce, Lanes: lanes(t), Events: events(t),
		After: t.AfterSteps, Program: strings.Join(t.Program, "\n"), Steps: len(t.Steps), NotReplayed: t.NotReplayed}
	if t.NotReplayed != "" {
		p.Events = nil // no rows to show
	}
	if t.Violation != nil {
		p.Rule, p.Detail = t.Violation.Rule, t.Violation.Detail
	}
	setup := lineOf(t.Setup, p, nil)
	setup.Setup, setup.Op = true, strings.TrimPrefix(t.Setup.Line, "setup: ")
	p.Lines = append(p.Lines, setup)
	prev := setup.Rows
	drained := false
	states := laneStates{}
	for _, s := range t.Steps {
		l := lineOf(s, p, prev)
		l.LaneStates = states.after(s, p.Lanes)
		if s.Drain && !drained {
			l.DrainFrom, drained = true, true
		}
		p.Lines = append(p.Lines, l)
		prev = l.Rows
	}
	return p
}

// lineOf lays out one step; prev is the step before's cells, to mark
// what changed.
func lineOf(s machine.TraceStep, p page, prev []cell) line {
	l := line{N: s.N, Lane: slices.Index(p.Lanes, s.Actor), Op: s.Op, Got: s.Got, Fault: s.Fault, WaitingOn: s.WaitingOn,
		Drain: s.Drain, Expected: strings.Join(s.Expected, " | ")}
	if s.Actor != machine.ActorFixture {
		l.Op = strings.TrimPrefix(l.Op, s.Actor+".") // the lane names the worker
	}
	l.Agrees = len(s.Expected) == 0 || slices.Contains(s.Expected, s.Got)
	l.Same = len(s.Expected) == 1 && s.Expected[0] == s.Got
	if s.Violation != nil {
		l.Rule, l.Detail = s.Violation.Rule, s.Violation.Detail
		switch {
		case s.ModelBefore && s.Got == "":
			l.Note = "the step did not return: the model's rows are as they were before it"
		case s.ModelBefore:
			l.Note = "the model allows no such outcome: its rows are as they were before the step"
		}
	}
	for i, e := range p.Events {
		c := cellOf(e, s)
		if prev != nil && i < len(prev) {
			c.Changed = c.Row != prev[i].Row || c.InModel != prev[i].InModel
		}
		l.Rows = append(l.Rows, c)
	}
	return l
}

func cellOf(event string, s machine.TraceStep) cell {
	find := func(rows []machine.TraceRow) (machine.TraceRow, bool) {
		i := slices.IndexFunc(rows, func(r machine.TraceRow) bool { return r.Event == event })
		if i < 0 {
			return machine.TraceRow{}, false
		}
		return rows[i], true
	}
	var c cell
	c.Row, c.InModel = find(s.Model)
	if !slices.Contains(s.Differs, event) {
		return c
	}
	c.Persisted = "no row"
	if db, ok := find(s.Persisted); ok {
		c.Persisted = db.String()
	}
	return c
}

// laneStates follows each worker's process and transaction through the
// steps: what a lane shows between its own steps.
type laneStates map[string]map[string]bool

// after applies step s and returns every lane's classes after it.
func (ls laneStates) after(s machine.TraceStep, lanes []string) []string {
	set := func(lane, state string, on bool) {
		if ls[lane] == nil {
			ls[lane] = map[string]bool{}
		}
		ls[lane][state] = on
	}
	switch s.Kind {
	case model.Pause:
		set(s.Actor, "paused", true)
	case model.Resume, model.Respawn:
		set(s.Actor, "paused", false)
		set(s.Actor, "dead", false)
	case model.EndSession:
		set(s.Actor, "intx", false) // its transaction rolls back; it reconnects
	case model.Kill:
		set(s.Actor, "dead", true)
		set(s.Actor, "paused", false)
		set(s.Actor, "intx", false) // its transaction rolls back
	case model.Begin:
		set(s.Actor, "intx", true)
	case model.Commit, model.Rollback:
		set(s.Actor, "intx", false)
	case model.Restart:
		for _, lane := range lanes {
			set(lane, "intx", false) // the crash rolls every transaction back
		}
	}
	out := make([]string, len(lanes))
	for i, lane := range lanes {
		var classes []string
		for _, state := range []string{"paused", "dead", "intx"} {
			if ls[lane][state] {
				classes = append(classes, state)
			}
		}
		out[i] = strings.Join(classes, " ")
	}
	return out
}
