package machine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/outboxlab/outboxlab/model"
)

// Trace is one replayed program, step by step: who ran each step, what the
// system returned beside what the model allowed, and every row as the
// model and as the database had it after the step. It is what the HTML
// report of a counterexample draws (package report); the printed program
// says the same in one line a step, without the rows.
type Trace struct {
	Protocol string
	Policy   string // the policy the protocol was held to, as its directives
	Workers  []string
	Events   []string
	HasGen   bool // the claim returns a generation: persisted gens are compared
	// Setup is the state before the first step: the events enqueued.
	Setup TraceStep
	Steps []TraceStep
	// Violation is the rule the replay broke, nil if it held. AfterSteps
	// is set when no step was running when it broke (the drain's final
	// check that every event reached SENT).
	Violation  *Violation
	AfterSteps bool
	// Program is the program as the replay printed it.
	Program []string
	// NotReplayed says why the trace was read from a printed program
	// (TraceOfProgram) and has no rows; "" for a replay.
	NotReplayed string
	// Reproduce is the command that repeats the search, set by whoever
	// ran it (the CLI and the Go API word it differently).
	Reproduce string
}

// Actors that are not workers: the lanes of the fixtures (enqueue, expire,
// make due, age: the harness's own connection), of the rescue's process
// and of the server (a crash and restart).
const (
	ActorFixture = "fixture"
	ActorRescuer = rescuer
	ActorServer  = "server"
)

// TraceStep is one step of a trace.
type TraceStep struct {
	N     int    // the step's number in the printed program
	Actor string // a worker's name, or one of the Actor constants
	Kind  model.Kind
	Op    string // the op as the program prints it: w1.Complete(e1, gen=1)
	// Got is what the system returned; "" when the step failed before it
	// returned (a statement blocked on a lock, a server error).
	Got string
	// Expected are the outcomes the model allowed; empty for a step whose
	// outcome was unknown (a fault: the model keeps both successors).
	Expected []string
	Line     string // the program's line for the step, with its comment
	Drain    bool   // the step is part of the drain that ends every check
	// Fault names the fault this step is or suffered: request_lost,
	// reply_lost, db_restart, pause, kill; "" for an ordinary step.
	Fault string
	// WaitingOn is the worker whose transaction this step waits on (a
	// program line "-> waiting on w2"); "" for a step that did not wait.
	WaitingOn string
	// Model is every row as the model has it after the step (the first
	// state the observed rows agree with); for a step whose outcome no
	// state allows, the rows before it, with ModelBefore set.
	Model       []TraceRow
	ModelBefore bool
	// Persisted is every row as the protocol's state query read it after
	// the step; nil when the step failed before anything was read.
	Persisted []TraceRow
	// Differs lists the events whose persisted row is not the model's.
	Differs   []string
	Violation *Violation // the rule this step broke, nil for every other step
}

// TraceRow is one event's row after a step.
type TraceRow struct {
	Event  string
	Status model.Status
	Gen    int64
	HasGen bool
	// Lease is "live", "aged" (live, at most 40% of it left), "expired"
	// for an INPROGRESS row, "due" or "waiting" (a retry's backoff) for a
	// READY row, "" otherwise.
	Lease string
	// Owner is the worker whose claim is the row's current one (model
	// side only: the database does not say who holds a claim).
	Owner string
	// LockedBy is the worker whose open transaction holds the row (model
	// side only: an open transaction is invisible to the state query).
	LockedBy string
}

// String is the row as one short line: INPROGRESS gen=2 live (w1).
func (r TraceRow) String() string {
	s := string(r.Status)
	if r.HasGen {
		s += fmt.Sprintf(" gen=%d", r.Gen)
	}
	if r.Lease != "" {
		s += " " + r.Lease
	}
	if r.Owner != "" {
		s += " (" + r.Owner + ")"
	}
	if r.LockedBy != "" {
		s += " locked by " + r.LockedBy
	}
	return s
}

// agrees reports whether the persisted row p shows what the model row m
// does: what the state query can show (an aged lease is still live).
func (m TraceRow) agrees(p TraceRow) bool {
	lease := func(l string) string { return strings.Replace(l, "aged", "live", 1) }
	return m.Event == p.Event && m.Status == p.Status && (!m.HasGen || m.Gen == p.Gen) && lease(m.Lease) == lease(p.Lease)
}

// Trace replays p as Replay does, recording every step. The error is
// Replay's: a program that cannot be replayed at all. A replay that does
// not fail as the search did (a protocol that fails a program only
// sometimes) is a trace with another violation, or none.
func (h *Harness) Trace(p Program) (*Trace, error) {
	rec := &recorder{t: &Trace{Protocol: h.Inst.Proto.Name, Policy: h.policy().String(),
		Workers: slices.Clone(p.Workers), Events: slices.Clone(p.Events), HasGen: h.Inst.Statements.HasGen && !h.Inst.Statements.Token}}
	rec.t.Setup = TraceStep{Actor: ActorFixture, Kind: model.Enqueue, Op: "setup"}
	rec.cur = &rec.t.Setup
	h.mu.Lock()
	h.trace = rec
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.trace = nil
		h.mu.Unlock()
	}()
	v, err := h.Replay(p)
	if err != nil {
		return nil, err
	}
	rec.t.Violation = v
	rec.t.Program = h.Program()
	for _, s := range append([]*TraceStep{&rec.t.Setup}, stepPointers(rec.t.Steps)...) {
		if s.Persisted != nil {
			s.Differs = differs(s.Model, s.Persisted)
		}
	}
	return rec.t, nil
}

func stepPointers(steps []TraceStep) []*TraceStep {
	out := make([]*TraceStep, len(steps))
	for i := range steps {
		out[i] = &steps[i]
	}
	return out
}

// modelRows is every row of s as a trace shows it, owners included.
func modelRows(s model.State, hasGen bool) []TraceRow {
	out := make([]TraceRow, 0, len(s.Rows))
	for _, row := range s.Rows {
		tr := TraceRow{Event: row.Event, Status: row.Status, Gen: row.Gen, HasGen: hasGen, LockedBy: row.LockedBy}
		switch {
		case row.Status == model.InProgress && row.LeaseLive && row.Aged:
			tr.Lease = "aged"
		case row.Status == model.InProgress && row.LeaseLive:
			tr.Lease = "live"
		case row.Status == model.InProgress:
			tr.Lease = "expired"
		case row.Status == model.Ready && row.Due:
			tr.Lease = "due"
		case row.Status == model.Ready:
			tr.Lease = "waiting"
		}
		if row.Status == model.InProgress {
			for _, c := range slices.Backward(s.Claims) {
				if c.Event == row.Event && c.Gen == row.Gen {
					tr.Owner = c.Worker
					break
				}
			}
		}
		out = append(out, tr)
	}
	return out
}

// persistedRows is every row the state query returned as a trace shows it.
func persistedRows(views []model.RowView) []TraceRow {
	out := make([]TraceRow, 0, len(views))
	for _, v := range views {
		tr := TraceRow{Event: v.Event, Status: v.Status, Gen: v.Gen, HasGen: v.HasGen}
		switch {
		case v.Status == model.InProgress && v.LeaseExpired:
			tr.Lease = "expired"
		case v.Status == model.InProgress:
			tr.Lease = "live"
		case v.Status == model.Ready && v.Due:
			tr.Lease = "due"
		case v.Status == model.Ready:
			tr.Lease = "waiting"
		}
		out = append(out, tr)
	}
	return out
}

// differs lists the events whose persisted row is not the model's, a row
// only one side has included.
func differs(modelSide, persisted []TraceRow) []string {
	var out []string
	find := func(rows []TraceRow, e string) (TraceRow, bool) {
		i := slices.IndexFunc(rows, func(r TraceRow) bool { return r.Event == e })
		if i < 0 {
			return TraceRow{}, false
		}
		return rows[i], true
	}
	for _, m := range modelSide {
		if p, ok := find(persisted, m.Event); !ok || !m.agrees(p) {
			out = append(out, m.Event)
		}
	}
	for _, p := range persisted {
		if _, ok := find(modelSide, p.Event); !ok {
			out = append(out, p.Event)
		}
	}
	return out
}
