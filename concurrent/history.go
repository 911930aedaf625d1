// Package concurrent is outboxlab's concurrent mode: real worker processes
// claim, complete, retry and renew at once, a fixture actor plays the clock
// (expire, age, due, rescue) and reads the rows, a fault loop kills, pauses,
// cuts connections and restarts the server, and every operation is
// recorded with its invocation and response time. Each short history is
// then checked for linearizability with porcupine against the same pure
// model the state machine uses (model.State), ambiguous outcomes as
// nondeterministic steps. A failing history is shrunk to the smallest part
// that still fails, and written as porcupine's HTML visualisation.
package concurrent

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/anishathalye/porcupine"
	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/worker"
)

// Input is one recorded operation: a model op, or a read of the persisted
// rows (Observe). MaySkip lists, for a claim or a rescue, the events whose
// row another statement was changing while it ran: such a row may have been
// locked at that instant, and SKIP LOCKED passes it by.
type Input struct {
	Op      model.Op
	Observe bool
	MaySkip []string
	// Fault is why an unknown outcome is unknown (request_lost, kill...).
	Fault string
	// deviate marks the one operation that the naming of a broken rule
	// lets break it (blame.go); never recorded.
	deviate bool
}

// Output is what the operation returned: an outcome, or the rows read.
type Output struct {
	Out  model.Outcome
	Rows []model.RowView
}

// describe is the operation as one line: w2.Complete(e1, gen=1) -> rejected,
// or Read() -> e1:SENT/1 e2:INPROGRESS/2/expired.
func describe(in Input, out Output) string {
	if in.Observe {
		var parts []string
		for _, r := range out.Rows {
			parts = append(parts, describeRow(r))
		}
		return "Read() -> " + strings.Join(parts, " ")
	}
	line := model.FormatStep(in.Op, out.Out)
	if out.Out.Kind == model.Unknown && in.Fault != "" {
		line += " (" + in.Fault + ")"
	}
	return line
}

func describeRow(r model.RowView) string {
	s := fmt.Sprintf("%s:%s", r.Event, r.Status)
	if r.HasGen {
		s += fmt.Sprintf("/%d", r.Gen)
	}
	switch {
	case r.Status == model.InProgress && r.LeaseExpired:
		s += "/expired"
	case r.Status == model.Ready && !r.Due:
		s += "/waiting"
	}
	return s
}

// recorder collects one history's operations from every actor at once,
// timed on one monotonic clock, the machine's (worker.MonoNow), which the
// worker processes' records are timed on too: nanoseconds since the
// history's start.
type recorder struct {
	mu    sync.Mutex
	start int64
	ops   []porcupine.Operation
	open  map[int]bool // recorded calls without a return yet
	notes []porcupine.Annotation
}

func newRecorder() *recorder {
	return &recorder{start: worker.MonoNow(), open: map[int]bool{}}
}

func (r *recorder) now() int64 { return worker.MonoNow() - r.start }

// add records a finished operation whose times are worker.MonoNow's.
func (r *recorder) add(op porcupine.Operation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.Call -= r.start
	op.Return -= r.start
	r.ops = append(r.ops, op)
}

// call records an invocation and returns its handle.
func (r *recorder) call(client int, in Input) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: r.now()})
	r.open[len(r.ops)-1] = true
	return len(r.ops) - 1
}

// ret records the response of the call h.
func (r *recorder) ret(h int, out Output) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops[h].Output = out
	r.ops[h].Return = r.now()
	delete(r.open, h)
}

// fault sets why h's outcome is unknown.
func (r *recorder) fault(h int, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	in := r.ops[h].Input.(Input)
	in.Fault = why
	r.ops[h].Input = in
}

// drop forgets the call h: a read that failed tells nothing.
func (r *recorder) drop(h int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops[h].Input = nil
	delete(r.open, h)
}

// note records a fault that is not an operation of the model (a pause, a
// cut connection) for the visualisation.
func (r *recorder) note(client int, start int64, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, porcupine.Annotation{ClientId: client, Start: start, End: r.now(),
		Description: what, BackgroundColor: "#f4c7c3"})
}

// history is the finished operations, every claim's and rescue's MaySkip
// filled in from the statements that overlapped it (buries: under an
// attempt budget, where a claim may lock rows it does not return).
func (r *recorder) history(buries bool) []porcupine.Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []porcupine.Operation
	for i, op := range r.ops {
		if op.Input == nil || r.open[i] {
			continue
		}
		out = append(out, op)
	}
	// The workers' records come in when each worker's drive ends: the
	// order of call is the history's.
	slices.SortStableFunc(out, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	for i := range out {
		in := out[i].Input.(Input)
		switch in.Op.Kind {
		case model.ClaimOp, model.Begin, model.Rescue:
			if !in.Observe {
				in.MaySkip = overlappingRows(out, i, buries)
				out[i].Input = in
			}
		}
	}
	return out
}

// overlappingRows are the events whose row a statement of another actor
// running during ops[i] may have held locked at some instant: a complete,
// retry, renew or fixture names its row; a claim locks the rows it
// returned, and until its commit shows, a row it took is locked but not
// yet taken (it may also bury rows under an attempt budget, and an unknown
// claim may have locked any: "*"); a rescue may have locked any.
func overlappingRows(ops []porcupine.Operation, i int, buries bool) []string {
	me := ops[i]
	var events []string
	add := func(e string) {
		if !slices.Contains(events, e) {
			events = append(events, e)
		}
	}
	for j, o := range ops {
		if j == i || o.ClientId == me.ClientId || o.Return < me.Call || o.Call > me.Return {
			continue
		}
		in, out := o.Input.(Input), o.Output.(Output)
		switch in.Op.Kind {
		case model.Complete, model.Retry, model.Renew, model.Expire, model.MakeDue, model.Age:
			add(in.Op.Event)
		case model.Enqueue:
			// A row inserted while the claim ran: its snapshot may predate
			// the insert, or its now() (a Begin's, the transaction's
			// start) the row's due time. Either way it may leave it out.
			add(in.Op.Event)
		case model.ClaimOp, model.Begin:
			if buries || out.Out.Kind == model.Unknown {
				return []string{"*"}
			}
			for _, g := range out.Out.Grants() {
				add(g.Event)
			}
		case model.Rescue:
			return []string{"*"}
		case model.Commit, model.Rollback, model.Kill, model.Restart:
			// A transaction that ended while the claim ran held its rows
			// locked for part of it: SKIP LOCKED passed over some of them
			// while they were held, and may have taken others it met after
			// the end (a claim of two statements, or one statement's scan).
			// The model has each row locked or free at one instant.
			held := heldByOpenTransactions(ops, j, buries)
			if slices.Contains(held, "*") {
				return held
			}
			for _, e := range held {
				add(e)
			}
		}
	}
	return events
}

// heldByOpenTransactions are the rows the transactions that ops[j] ends
// had locked: the rows its worker's open claim transaction took (any row
// under an attempt budget, where it may also have buried some, or when its
// claim's outcome is unknown), or for a restart those of every worker.
func heldByOpenTransactions(ops []porcupine.Operation, j int, buries bool) []string {
	end := ops[j].Input.(Input).Op
	last := map[string]int{} // worker -> its last operation called before ops[j]
	for i, o := range ops {
		op := o.Input.(Input).Op
		if i == j || o.Call >= ops[j].Call || op.Worker == "" || op.Kind == model.Kill {
			continue
		}
		if end.Kind != model.Restart && op.Worker != end.Worker {
			continue
		}
		if k, ok := last[op.Worker]; !ok || ops[k].Call < o.Call {
			last[op.Worker] = i
		}
	}
	var out []string
	for _, i := range last {
		if ops[i].Input.(Input).Op.Kind != model.Begin {
			continue
		}
		res := ops[i].Output.(Output)
		if buries || res.Out.Kind == model.Unknown {
			return []string{"*"}
		}
		for _, g := range res.Out.Grants() {
			out = append(out, g.Event)
		}
	}
	slices.Sort(out)
	return out
}
