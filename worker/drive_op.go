package worker

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/outboxlab/outboxlab/model"
)

// driver is one drive in progress in the worker process.
type driver struct {
	a    *agent
	b    *Board
	slot Slot
	// stale is set when a fault broke the connection: the worker
	// reconnects before its next operation.
	stale   bool
	failure *DriveReply
}

// drive runs an OpDrive request.
func (a *agent) drive(req Request) Response {
	if req.Drive == nil || a.spec.Board == "" {
		return Response{Err: "drive: no board to record on"}
	}
	if a.board == nil {
		b, err := OpenBoard(a.spec.Board)
		if err != nil {
			return Response{Err: err.Error()}
		}
		a.board = b
	}
	d := &driver{a: a, b: a.board, slot: a.board.Slot(a.spec.Slot)}
	Drawer{Board: a.board, Slot: a.spec.Slot, Name: a.spec.Name, HasGen: a.spec.Statements.HasGen, Req: *req.Drive}.Draw(d)
	if d.failure != nil {
		d.b.Stop()
		return Response{Drive: d.failure}
	}
	return Response{}
}

// Do runs op (req on the worker's connection) as one record of the
// board and returns the answer, its outcome and a claim's rows in enqueue
// order. ok is false when the worker's part of the history is over: a
// failure (d.failure has it), or no connection until the history's end.
func (d *driver) Do(op model.Op, req Request) (resp Response, out model.OutcomeKind, grants []Grant, ok bool) {
	if (d.stale || d.a.conn == nil || d.a.conn.IsClosed()) && !d.reconnect() {
		return resp, "", nil, false
	}
	backend, epoch := d.a.backendPID(), d.b.Epoch().Load()
	d.slot.SetBackend(backend)
	i := d.slot.Open(Record{Kind: op.Kind, Event: EventNumber(op.Event), Gen: op.Gen, Call: MonoNow(), Backend: backend, Epoch: epoch})
	if i < 0 {
		return resp, "", nil, d.fail("harness error", "the board has no room for another record")
	}
	resp = d.a.handle(req)
	ret := MonoNow()
	fate, rule, detail := Judge(op, resp, d.slot.Faulted() || d.b.Epoch().Load() != epoch)
	switch fate {
	case Known:
		out, grants, err := outcomeOf(op.Kind, resp, d.b.Events())
		if err == nil {
			err = d.slot.Finish(i, ret, out, grants, "")
		}
		if err != nil {
			d.fail("harness error", fmt.Sprintf("%v: %v", op, err))
			d.slot.Finish(i, ret, model.Unknown, nil, "")
			return resp, "", nil, false
		}
		return resp, out, grants, true
	case Lost:
		// The connection is gone on this side, but its backend may still
		// commit the statement: the parent ends it before the outcome is
		// written as unknown. A record left open is the parent's to end.
		d.stale = true
		if !d.askEnd(backend, epoch) {
			return resp, "", nil, false
		}
		d.slot.Finish(i, MonoNow(), model.Unknown, nil, "connection cut")
		d.backOff()
		return resp, model.Unknown, nil, true
	}
	// The failure first: killed after it, the worker has still told.
	d.fail(rule, detail)
	d.slot.Finish(i, ret, model.Unknown, nil, "")
	return resp, "", nil, false
}

// fail records the worker's failure on the board, where a kill cannot
// take it, and stops the history.
func (d *driver) fail(rule, detail string) bool {
	if d.failure == nil {
		d.failure = &DriveReply{Rule: rule, Detail: detail}
		d.slot.SetFailure(rule, detail)
	}
	d.b.Stop()
	return false
}

// askEnd asks the parent to end backend and waits for its answer; false
// when the pipe failed (the parent is gone or gave up on this worker).
func (d *driver) askEnd(backend uint32, epoch int64) bool {
	if backend == 0 {
		return true
	}
	return d.a.askParent(&DriveReply{EndBackend: backend, Epoch: epoch}, OpEnded)
}

// reconnect gives the worker a new connection after a fault broke the
// old one, trying until ten seconds past the history's end.
func (d *driver) reconnect() bool {
	for MonoNow() < d.b.End()+int64(10*time.Second) {
		d.a.drop()
		if resp := d.a.connectWithin(d.a.spec.OpTimeout); resp.Err == "" {
			d.stale = false
			d.slot.SetBackend(d.a.backendPID())
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// backOff is what a worker does after a statement whose outcome it does
// not know: it waits a moment, and while the server restarts, until it is
// back (each unknown outcome doubles the states a history may be in).
func (d *driver) backOff() {
	time.Sleep(3 * time.Millisecond)
	for d.b.Restarting().Load() != 0 && MonoNow() < d.b.End() {
		time.Sleep(5 * time.Millisecond)
	}
}

// outcomeOf is a worker's answer in the model's terms; a claim's rows in
// enqueue order (a batch may come back in any order).
func outcomeOf(kind model.Kind, resp Response, events int) (model.OutcomeKind, []Grant, error) {
	switch kind {
	case model.ClaimOp, model.Begin:
		if len(resp.Rows) == 0 {
			return model.Empty, nil, nil
		}
		var grants []Grant
		for _, r := range resp.Rows {
			n := EventNumber(r.Event)
			if n < 1 || n > events {
				return "", nil, fmt.Errorf("a claim returned event %q, which the history never enqueued", r.Event)
			}
			grants = append(grants, Grant{Event: n, Gen: r.Gen})
		}
		slices.SortStableFunc(grants, func(a, b Grant) int { return cmp.Compare(a.Event, b.Event) })
		return model.Claimed, grants, nil
	case model.Complete, model.Retry, model.Renew:
		if resp.Applied {
			return model.Applied, nil, nil
		}
		return model.Rejected, nil, nil
	}
	return model.OK, nil, nil
}

// EventNumber is n for the event "e<n>", 0 for any other name: the
// events of a concurrent history, numbered in enqueue order.
func EventNumber(e string) int {
	if len(e) > 1 && e[0] == 'e' {
		if n, err := strconv.Atoi(e[1:]); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// EventName is the event numbered n (a Record's Event and Grants).
func EventName(n int) string { return "e" + strconv.Itoa(n) }
