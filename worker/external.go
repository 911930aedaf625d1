package worker

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/workerproto"
)

// external is the state of a Process that runs a worker executable
// (docs/worker-protocol.md): its client, and what the parent must keep
// for the contract, since the process keeps nothing across a kill.
type external struct {
	c     *workerproto.Client
	spec  *sut.WorkerSpec
	batch int
	// expire is the fixture a begin(expire e) sends.
	expire sut.Stmt
	// op is the outstanding request's operation, for its rule.
	op string
	// tx: a begin was answered ok and no commit or rollback since.
	tx bool
	// lost: the last request failed indefinitely; the worker answers
	// connection_lost to all but a reconnect, which the next request is
	// preceded by (as a Go worker reconnects after such a failure).
	lost bool
	// ready is an answer the parent made without the worker (a reset of
	// a worker that had nothing to reset), returned by the next await.
	ready *Response
}

// ContractError is an external worker that broke the contract (its reply
// was not JSON, was of the wrong type or to the wrong request, or it
// exited): the protocol's failure, with the worker's stderr.
type ContractError = workerproto.Error

// spawnExternal starts spec's worker executable and sends it init.
func spawnExternal(spec Spec) (*Process, error) {
	w := spec.Statements.Worker
	spec.App = appName(spec.Name, spec.Pooled)
	c, err := workerproto.Start(w.Command, spec.Name, nil)
	if err != nil {
		return nil, err
	}
	_, err = c.Init(workerproto.Config{DSN: sut.WorkerDSN(spec.ConnString, spec.App), Schema: spec.Statements.Schema,
		OpTimeout: spec.OpTimeout, WaitTimeout: WaitTimeout, ApplicationName: spec.App, Directives: w.Directives})
	if err != nil {
		c.Kill(false)
		return nil, err
	}
	return &Process{Name: spec.Name, spec: spec, ext: &external{c: c, spec: w, batch: max(spec.Statements.Batch, 1),
		expire: spec.Statements.Stmts[sut.Expire]}}, nil
}

// External reports whether the process is a worker executable's.
func (p *Process) External() bool { return p.ext != nil }

// StderrTail is an external worker's last lines of stderr ("" for a Go
// worker).
func (p *Process) StderrTail() string {
	if p.ext == nil {
		return ""
	}
	return p.ext.c.StderrTail()
}

// requestTimeout is how long an external worker has for a request: its
// statement's timeout and a grace for the process itself.
func (p *Process) requestTimeout(req Request) time.Duration {
	if req.MayWait {
		return WaitTimeout + 2*time.Second
	}
	return p.spec.OpTimeout + 2*time.Second
}

// send writes req as the contract's request. A request after an
// indefinite failure is preceded by a reconnect; a reset is the rollback
// of an open transaction, or a reconnect, or nothing.
func (e *external) send(p *Process, req Request) error {
	e.ready, e.op = nil, req.Op
	if req.Op == "reset" {
		switch {
		case e.lost:
			req.Op = workerproto.Reconnect
		case e.tx:
			req.Op = workerproto.Rollback
		default:
			e.ready = &Response{}
			return nil
		}
	}
	if e.lost && req.Op != workerproto.Reconnect {
		if resp, err := e.call(p, Request{Op: workerproto.Reconnect}); err != nil || resp.Err != "" {
			if err == nil {
				e.ready = &resp
			}
			return err
		}
	}
	if req.Op == workerproto.Begin {
		// The machine's begin is a claim in a new transaction: the
		// contract's begin (with the fixture), then its claim.
		resp, err := e.call(p, req)
		if err != nil {
			return err
		}
		if resp.Err != "" {
			e.ready = &resp
			return nil
		}
		req = Request{Op: workerproto.Claim, MayWait: req.MayWait}
	}
	w, err := e.request(req)
	if err != nil {
		return err
	}
	e.op = req.Op
	return e.c.Send(w)
}

// call is send and await for a request the parent makes on its own.
func (e *external) call(p *Process, req Request) (Response, error) {
	w, err := e.request(req)
	if err != nil {
		return Response{}, err
	}
	e.op = req.Op
	if err := e.c.Send(w); err != nil {
		return Response{}, err
	}
	return e.await(p.requestTimeout(req))
}

func (e *external) request(req Request) (workerproto.Request, error) {
	w := workerproto.Request{Type: req.Op, MayWait: req.MayWait}
	switch req.Op {
	case workerproto.Claim, workerproto.Rescue, workerproto.Commit, workerproto.Rollback, workerproto.Reconnect:
	case workerproto.Begin:
		if req.ID != "" {
			w.Fixture = &workerproto.Fixture{SQL: e.expire.SQL, Args: fixtureArgs(e.expire, req.ID)}
		}
	case workerproto.Complete, workerproto.Retry, workerproto.Renew:
		w.Row = rows.get(e.c.Worker, req)
	default:
		return w, fmt.Errorf("worker %s: the worker protocol has no %q request", e.c.Worker, req.Op)
	}
	return w, nil
}

// fixtureArgs are the expire fixture's parameters, as text.
func fixtureArgs(st sut.Stmt, id string) []string {
	args := make([]string, len(st.Params))
	for i, name := range st.Params {
		switch name {
		case "id":
			args[i] = id
		case "worker":
			args[i] = "harness"
		}
	}
	return args
}

// await reads the answer and puts it in the machine's terms.
func (e *external) await(limit time.Duration) (Response, error) {
	if e.ready != nil {
		resp := *e.ready
		e.ready = nil
		return resp, nil
	}
	r, err := e.c.Await(limit)
	if err == workerproto.ErrTimeout {
		return Response{}, ErrHung
	}
	if err != nil {
		return Response{}, err
	}
	op := e.op
	if op == workerproto.Commit || op == workerproto.Rollback || op == workerproto.Reconnect {
		e.tx = false
	}
	if r.Type == "error" {
		return e.failure(op, r), nil
	}
	e.lost = false
	switch op {
	case workerproto.Begin:
		e.tx = true
	case workerproto.Claim:
		return e.claimed(r), nil
	case workerproto.Complete, workerproto.Retry, workerproto.Renew:
		if r.Applied == nil {
			return Response{Err: op + ": the worker's ok has no applied", Protocol: true,
				Rule: op + " answered ok without applied"}, nil
		}
		return Response{Applied: *r.Applied}, nil
	}
	return Response{}, nil
}

// failure is an error reply in the machine's terms: definite (a server
// error, the worker's own failure) or indefinite (the connection, a
// timeout; then the next request is preceded by a reconnect).
func (e *external) failure(op string, r workerproto.Reply) Response {
	msg := r.Code + ": " + r.Text
	if r.SQLState != "" {
		msg += " (SQLSTATE " + r.SQLState + ")"
	}
	switch {
	case r.Code == workerproto.CodeProtocol:
		return Response{Err: msg, Protocol: true, Rule: op + " failed in the worker's own code"}
	case r.Code == workerproto.CodeUnsupported:
		return Response{Err: msg, Protocol: true, Rule: op + " is unsupported by the worker"}
	case r.Code == workerproto.CodeServerError && workerproto.DefiniteSQLState(r.SQLState):
		return Response{Err: msg, ServerErr: true}
	case workerproto.Indefinite(r):
		e.lost, e.tx = true, false
		return Response{Err: msg, Timeout: r.Code == workerproto.CodeTimeout}
	}
	return Response{Err: msg, Protocol: true, Rule: fmt.Sprintf("%s answered an error of unknown code %q", op, r.Code)}
}

// claimed checks a claim's rows as a claim section's are checked, and
// keeps each row object for its outcomes.
func (e *external) claimed(r workerproto.Reply) Response {
	if len(r.Rows) > e.batch {
		return Response{Err: fmt.Sprintf("claim returned %d rows, more than batch=%d", len(r.Rows), e.batch), Protocol: true,
			Rule: "claim returned more than batch rows"}
	}
	out := make([]sut.ClaimResult, 0, len(r.Rows))
	seen := map[string]bool{}
	for _, raw := range r.Rows {
		row, err := workerproto.ParseRow(raw, e.spec.Fence)
		if err != nil {
			return Response{Err: "claim: " + err.Error(), Protocol: true, Rule: "claim returned a row the contract forbids"}
		}
		if seen[row.Event] {
			return Response{Err: fmt.Sprintf("claim returned event %s twice", row.Event), Protocol: true, Rule: "claim returned an event twice"}
		}
		seen[row.Event] = true
		rows.put(e.c.Worker, row)
		out = append(out, sut.ClaimResult{Found: true, ID: row.ID, Event: row.Event, Gen: row.Gen, Token: row.Token})
	}
	return claimed(out)
}

// rowBook keeps every row object an external worker's claim returned, by
// worker name, id and generation or token: an outcome sends it back
// exactly, even from a process started after the one that claimed it.
type rowBook struct {
	mu   sync.Mutex
	rows map[string]json.RawMessage
}

var rows = rowBook{rows: map[string]json.RawMessage{}}

func rowKey(worker, id string, gen int64, token string) string {
	return fmt.Sprintf("%s\x00%s\x00%d\x00%s", worker, id, gen, token)
}

func (b *rowBook) put(worker string, r workerproto.Row) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.rows) > 1<<16 {
		clear(b.rows) // rows of checks long over
	}
	b.rows[rowKey(worker, r.ID, r.Gen, r.Token)] = r.Raw
}

// get is the row object of req's claim; one made of its id and fence
// when the claim is unknown (an outcome no claim of this run returned).
func (b *rowBook) get(worker string, req Request) json.RawMessage {
	b.mu.Lock()
	raw, ok := b.rows[rowKey(worker, req.ID, req.Gen, req.Token)]
	b.mu.Unlock()
	if ok {
		return raw
	}
	m := map[string]any{"id": req.ID}
	if req.Token != "" {
		m["token"] = req.Token
	} else if req.Gen != 0 {
		m["gen"] = req.Gen
	}
	out, _ := json.Marshal(m)
	return out
}
