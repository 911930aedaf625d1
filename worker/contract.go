package worker

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/workerproto"
)

// The parent's side of the worker protocol for every worker process: the
// machine's requests (Request) as the contract's, and the contract's
// replies as the machine's answers (Response). A Go worker and a worker
// executable differ only in what they said at init: the Go worker reports
// its backend, names the row a begin expires rather than being sent the
// fixture's SQL, and serves the suite's extensions (serve_wire.go).

// ContractError is a worker that broke the contract (its reply was not
// JSON, was of the wrong type or to the wrong request, or it exited): the
// protocol's failure, with the worker's stderr.
type ContractError = workerproto.Error

// spawnExternal starts spec's worker executable and sends it init.
func spawnExternal(spec Spec) (*Process, error) {
	w := spec.Statements.Worker
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
	return &Process{Name: spec.Name, spec: spec, c: c, fence: w.Fence, batch: max(spec.Statements.Batch, 1),
		expire: spec.Statements.Stmts[sut.Expire]}, nil
}

// External reports whether the process is a worker executable's.
func (p *Process) External() bool { return !p.goWorker }

// StderrTail is an external worker's last lines of stderr ("" for a Go
// worker, whose stderr is the suite's own).
func (p *Process) StderrTail() string {
	if p.goWorker {
		return ""
	}
	return p.c.StderrTail()
}

// requestTimeout is how long a worker has for a request: its statement's
// timeout and a grace for the process itself.
func (p *Process) requestTimeout(req Request) time.Duration {
	if req.MayWait {
		return WaitTimeout + 2*time.Second
	}
	return p.spec.OpTimeout + 2*time.Second
}

// sendContract writes req as the contract's request. A request after an
// indefinite failure is preceded by a reconnect; a reset is the rollback
// of an open transaction, or a reconnect, or nothing (a Go worker serves
// reset itself).
func (p *Process) sendContract(req Request) error {
	p.ready, p.op = nil, req.Op
	if req.Op == opReset && !p.goWorker {
		switch {
		case p.lost:
			req.Op = workerproto.Reconnect
		case p.tx:
			req.Op = workerproto.Rollback
		default:
			p.ready = &Response{}
			return nil
		}
	}
	if p.lost && req.Op != workerproto.Reconnect && req.Op != opReset {
		if resp, err := p.call(Request{Op: workerproto.Reconnect}); err != nil || resp.Err != "" {
			if err == nil {
				p.ready = &resp
			}
			return err
		}
	}
	if req.Op == workerproto.Begin {
		// The machine's begin is a claim in a new transaction: the
		// contract's begin (with the fixture), then its claim.
		resp, err := p.call(req)
		if err != nil {
			return err
		}
		if resp.Err != "" {
			p.ready = &resp
			return nil
		}
		req = Request{Op: workerproto.Claim, MayWait: req.MayWait}
	}
	w, err := p.request(req)
	if err != nil {
		return err
	}
	p.op = req.Op
	return p.c.Send(w)
}

// call is send and await for a request the parent makes on its own.
func (p *Process) call(req Request) (Response, error) {
	w, err := p.request(req)
	if err != nil {
		return Response{}, err
	}
	p.op = req.Op
	if err := p.c.Send(w); err != nil {
		return Response{}, err
	}
	return p.await(p.requestTimeout(req))
}

func (p *Process) request(req Request) (workerproto.Request, error) {
	w := workerproto.Request{Type: req.Op, MayWait: req.MayWait}
	var ext any
	switch req.Op {
	case workerproto.Claim, workerproto.Rescue, workerproto.Commit, workerproto.Rollback, workerproto.Reconnect:
	case workerproto.Begin:
		switch {
		case req.ID == "":
		case p.goWorker:
			w.Expire = req.ID
		default:
			w.Fixture = &workerproto.Fixture{SQL: p.expire.SQL, Args: fixtureArgs(p.expire, req.ID)}
		}
	case workerproto.Complete, workerproto.Retry, workerproto.Renew:
		w.Row = p.row(req)
	case OpSplit, OpFinish:
		if req.ID != "" {
			w.Row = p.row(req)
		}
		ext = req.Split
		if req.Split != nil {
			p.split = req.Split.Section
		}
	case OpDrive, OpEnded:
		ext = req.Drive
	case OpPublish, OpConsume:
		ext = req.Relay
	case opReset:
	default:
		return w, fmt.Errorf("worker %s: the worker protocol has no %q request", p.Name, req.Op)
	}
	if !p.goWorker && (ext != nil || req.Op == opReset || req.Op == OpEnded) {
		// The suite's extensions are its Go worker's.
		return w, fmt.Errorf("worker %s: the worker protocol has no %q request", p.Name, req.Op)
	}
	if ext != nil {
		raw, err := json.Marshal(ext)
		if err != nil {
			return w, err
		}
		w.Ext = raw
	}
	return w, nil
}

// row is the row object an outcome sends: a Go worker's is made of the
// request's id and fence (which is all it wrote), a worker executable's
// is the one its claim returned.
func (p *Process) row(req Request) json.RawMessage {
	if p.goWorker {
		b, _ := json.Marshal(rowObject{ID: req.ID, Gen: req.Gen, Token: req.Token})
		return b
	}
	return rows.get(p.c.Worker, req)
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
func (p *Process) await(limit time.Duration) (Response, error) {
	if p.ready != nil {
		resp := *p.ready
		p.ready = nil
		return resp, nil
	}
	r, err := p.c.Await(limit)
	if err == workerproto.ErrTimeout {
		return Response{}, ErrHung
	}
	if err != nil {
		return Response{}, err
	}
	resp, err := p.answer(r)
	if p.goWorker {
		p.Backend = r.Backend
		resp.Backend = r.Backend
	}
	return resp, err
}

func (p *Process) answer(r workerproto.Reply) (Response, error) {
	op := p.op
	switch op {
	case workerproto.Commit, workerproto.Rollback, workerproto.Reconnect, opReset, OpFinish:
		p.tx = false
	}
	var resp Response
	if len(r.Ext) > 0 {
		var err error
		switch op {
		case OpDrive, OpEnded:
			resp.Drive = &DriveReply{}
			err = json.Unmarshal(r.Ext, resp.Drive)
		case OpPublish, OpConsume:
			resp.Relay = &RelayReply{}
			err = json.Unmarshal(r.Ext, resp.Relay)
		}
		if err != nil {
			return Response{}, fmt.Errorf("worker %s: %s reply's ext: %w", p.Name, op, err)
		}
	}
	if r.Type == "error" {
		f := p.failure(op, r)
		f.Drive = resp.Drive
		return f, nil
	}
	p.lost = false
	switch {
	case op == workerproto.Begin || op == OpSplit:
		p.tx = true
	case op == workerproto.Claim || op == OpFinish && p.split == sut.Claim:
		return p.claimed(r), nil
	case op == workerproto.Complete || op == workerproto.Retry || op == workerproto.Renew || op == OpFinish:
		if r.Applied == nil {
			return Response{Err: op + ": the worker's ok has no applied", Protocol: true,
				Rule: op + " answered ok without applied"}, nil
		}
		resp.Applied = *r.Applied
	}
	return resp, nil
}

// failure is an error reply in the machine's terms: definite (a server
// error, the worker's own failure) or indefinite (the connection, a
// timeout; then the next request is preceded by a reconnect). A Go
// worker's text is its error's own; an executable's carries the code.
func (p *Process) failure(op string, r workerproto.Reply) Response {
	msg := r.Text
	if !p.goWorker {
		msg = r.Code + ": " + r.Text
		if r.SQLState != "" {
			msg += " (SQLSTATE " + r.SQLState + ")"
		}
	}
	rule := func(def string) string {
		if r.Rule != "" {
			return r.Rule
		}
		return def
	}
	switch {
	case r.Code == workerproto.CodeProtocol:
		return Response{Err: msg, Protocol: true, Rule: rule(op + " failed in the worker's own code")}
	case r.Code == workerproto.CodeUnsupported:
		return Response{Err: msg, Protocol: true, Rule: rule(op + " is unsupported by the worker")}
	case r.Code == workerproto.CodeServerError && workerproto.DefiniteSQLState(r.SQLState):
		return Response{Err: msg, ServerErr: true}
	case workerproto.Indefinite(r):
		p.lost, p.tx = true, false
		return Response{Err: msg, Timeout: r.Code == workerproto.CodeTimeout}
	}
	return Response{Err: msg, Protocol: true, Rule: fmt.Sprintf("%s answered an error of unknown code %q", op, r.Code)}
}

// claimed checks a claim's rows as a claim section's are checked, and
// keeps each row object of a worker executable for its outcomes.
func (p *Process) claimed(r workerproto.Reply) Response {
	if len(r.Rows) > p.batch {
		return Response{Err: fmt.Sprintf("claim returned %d rows, more than batch=%d", len(r.Rows), p.batch), Protocol: true,
			Rule: "claim returned more than batch rows"}
	}
	out := make([]sut.ClaimResult, 0, len(r.Rows))
	seen := map[string]bool{}
	for _, raw := range r.Rows {
		row, err := p.parseRow(raw)
		if err != nil {
			return Response{Err: "claim: " + err.Error(), Protocol: true, Rule: "claim returned a row the contract forbids"}
		}
		if seen[row.Event] {
			return Response{Err: fmt.Sprintf("claim returned event %s twice", row.Event), Protocol: true, Rule: "claim returned an event twice"}
		}
		seen[row.Event] = true
		if !p.goWorker {
			rows.put(p.c.Worker, row)
		}
		out = append(out, sut.ClaimResult{Found: true, ID: row.ID, Event: row.Event, Gen: row.Gen, Token: row.Token})
	}
	return claimed(out)
}

// parseRow reads a claimed row. A Go worker's holds exactly what its
// protocol returned (an empty token included), which it checked itself.
func (p *Process) parseRow(raw json.RawMessage) (workerproto.Row, error) {
	if !p.goWorker {
		return workerproto.ParseRow(raw, p.fence)
	}
	var r rowObject
	if err := json.Unmarshal(raw, &r); err != nil {
		return workerproto.Row{}, fmt.Errorf("a claimed row is not a row object: %s", raw)
	}
	return workerproto.Row{ID: r.ID, Event: r.Event, Gen: r.Gen, Token: r.Token, Raw: raw}, nil
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
