package worker

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/workerproto"
)

// The Go worker speaks the worker protocol (docs/worker-protocol.md), as a
// worker executable in any language does: a SQL file and a Go driver are
// two implementations of the contract, and the parent has one client for
// every kind of worker. What the contract lacks, the suite's own requests,
// goes as compatible extensions, listed as features in init_ok:
//
//   - init's ext: the protocol to run (its statements, or the name of the
//     Go driver this executable registered), and the board a drive
//     records on;
//   - expire: a begin names the row to expire first (a Go driver's
//     fixture is Go code, not SQL a begin could carry);
//   - reset: a new check (no transaction open, a working connection);
//   - split and finish: a section in two requests (split.go);
//   - drive and ended: a concurrent history's part, driven by the worker
//     (drive.go);
//   - publish and consume: relay mode's broker clients (relay.go).
//
// Errors cross as the contract's codes, and a protocol error's rule as its
// rule field.

// goFeatures are the features every Go worker serves.
var goFeatures = []string{workerproto.FeatureTx, workerproto.FeatureExpire,
	featureReset, featureSplit, featureDrive, featureRelay}

// The extension features and their request types.
const (
	featureReset = "reset"
	featureSplit = "split"
	featureDrive = "drive"
	featureRelay = "relay"
	opReset      = "reset"
)

// initExt is a Go worker's init extension: what it runs.
type initExt struct {
	Statements *sut.Statements `json:"statements"`
	Pooled     bool            `json:"pooled,omitempty"`
	Board      string          `json:"board,omitempty"`
	Slot       int             `json:"slot,omitempty"`
}

// rowObject is a claimed row as a Go worker writes it and reads it back.
type rowObject struct {
	ID    string `json:"id"`
	Event string `json:"event"`
	Gen   int64  `json:"gen"`
	Token string `json:"token"`
}

// serve answers init, then every request until the parent closes stdin.
func serve(in io.Reader, out io.Writer) error {
	a := agent{in: bufio.NewReaderSize(in, 1<<16), out: bufio.NewWriter(out)}
	req, err := a.read()
	if err != nil {
		return fmt.Errorf("read init: %w", err)
	}
	if req.Type != workerproto.Init {
		a.writeError(Response{Err: "the first request must be init, not " + req.Type, Protocol: true,
			Rule: "the first request was not init"})
		return errors.New("no init")
	}
	if resp := a.init(req); resp.Err != "" {
		// An unregistered Go driver, or no connection: the parent's Spawn
		// returns the reply's text.
		a.writeError(resp)
		return errors.New(resp.Err)
	}
	b := a.begin("init_ok")
	b = append(b, `,"features":[`...)
	for i, f := range a.features() {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, f)
	}
	b = append(b, `],"fence":`...)
	b = appendString(b, a.fence())
	if err := a.end(b); err != nil {
		return err
	}
	for {
		req, err := a.read()
		if errors.Is(err, io.EOF) {
			return nil // the parent closed the pipe: done
		}
		if err != nil {
			return err
		}
		if err := a.answer(req); err != nil {
			return err
		}
	}
}

// read reads the next request; its id is the one the next reply answers.
func (a *agent) read() (workerproto.Request, error) {
	var req workerproto.Request
	line, err := a.in.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		var rest []byte
		rest, err = a.in.ReadBytes('\n')
		line = append(append([]byte(nil), line...), rest...)
	}
	if err != nil {
		return req, err
	}
	if err := json.Unmarshal(line, &req); err != nil {
		return req, fmt.Errorf("a request that is not JSON: %w", err)
	}
	a.id = req.ID
	return req, nil
}

func (a *agent) init(req workerproto.Request) Response {
	var ext initExt
	if len(req.Ext) > 0 {
		if err := json.Unmarshal(req.Ext, &ext); err != nil {
			return Response{Err: "init's ext: " + err.Error(), Protocol: true, Rule: "init's ext is malformed"}
		}
	}
	if ext.Statements == nil {
		return Response{Err: "this worker runs a protocol file or a Go driver, named in init's ext", Protocol: true,
			Rule: "init named no protocol"}
	}
	a.spec = Spec{Name: req.Worker, ConnString: req.DSN, Statements: ext.Statements,
		OpTimeout: time.Duration(req.OpTimeoutMS) * time.Millisecond, Board: ext.Board, Slot: ext.Slot,
		Pooled: ext.Pooled, App: req.ApplicationName}
	if req.Schema != "" {
		a.spec.Statements.Schema = req.Schema
	}
	drv, err := a.spec.Statements.Driver()
	if err != nil {
		return Response{Err: err.Error(), Protocol: true, Rule: "init named an unknown Go driver"}
	}
	a.drv = drv
	return a.connect()
}

// features are what init_ok lists: the optional requests of the contract
// this protocol has, and the extensions.
func (a *agent) features() []string {
	out := append([]string(nil), goFeatures...)
	for _, f := range []string{workerproto.FeatureRenew, workerproto.FeatureRescue} {
		if a.drv.StatementCount(f) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// fence is the contract's name for how the protocol's rows are fenced.
func (a *agent) fence() string {
	switch st := a.spec.Statements; {
	case st.Token:
		return "token"
	case st.HasGen:
		return "counter"
	}
	return "none"
}

// answer runs one request and writes its reply.
func (a *agent) answer(w workerproto.Request) error {
	req := Request{Op: w.Type, MayWait: w.MayWait}
	var split *SplitRequest
	switch w.Type {
	case workerproto.Begin:
		req.Op, req.ID, req.fixture = opOpen, w.Expire, w.Fixture
	case workerproto.Complete, workerproto.Retry, workerproto.Renew, OpSplit, OpFinish:
		if len(w.Row) > 0 {
			var row rowObject
			if err := json.Unmarshal(w.Row, &row); err != nil {
				return a.writeError(Response{Err: w.Type + ": the row is not a row object: " + err.Error(), Protocol: true,
					Rule: w.Type + " was sent a malformed row"})
			}
			req.ID, req.Gen, req.Token = row.ID, row.Gen, row.Token
		}
		if w.Type == OpSplit || w.Type == OpFinish {
			split = &SplitRequest{}
			req.Split = split
		}
	case OpDrive:
		req.Drive = &DriveRequest{}
	case OpPublish, OpConsume:
		req.Relay = &RelayRequest{}
	case workerproto.Claim, workerproto.Rescue, workerproto.Commit, workerproto.Rollback, workerproto.Reconnect, opReset:
	default:
		return a.writeError(Response{Err: fmt.Sprintf("unsupported request type %q", w.Type), unsupported: true})
	}
	if err := unmarshalExt(w.Ext, req); err != nil {
		return a.writeError(Response{Err: w.Type + "'s ext: " + err.Error(), Protocol: true, Rule: w.Type + "'s ext is malformed"})
	}
	resp := a.handle(req)
	if resp.Err != "" {
		return a.writeError(resp)
	}
	b := a.begin(replyType(w.Type))
	switch {
	case w.Type == workerproto.Claim || w.Type == OpFinish && split.Section == sut.Claim:
		b = a.appendRows(b, resp.Rows)
	case w.Type == workerproto.Complete || w.Type == workerproto.Retry || w.Type == workerproto.Renew || w.Type == OpFinish:
		b = append(b, `,"applied":`...)
		b = strconv.AppendBool(b, resp.Applied)
	}
	switch {
	case resp.Drive != nil:
		b = appendExt(b, resp.Drive)
	case resp.Relay != nil:
		b = appendExt(b, resp.Relay)
	}
	return a.end(b)
}

// unmarshalExt reads an extension request's object into req's part for
// it.
func unmarshalExt(ext json.RawMessage, req Request) error {
	var dst any
	switch {
	case req.Split != nil:
		dst = req.Split
	case req.Drive != nil:
		dst = req.Drive
	case req.Relay != nil:
		dst = req.Relay
	default:
		return nil
	}
	return json.Unmarshal(orEmpty(ext), dst)
}

func orEmpty(ext json.RawMessage) json.RawMessage {
	if len(ext) == 0 {
		return json.RawMessage("{}")
	}
	return ext
}

func replyType(request string) string {
	if request == workerproto.Claim {
		return "claim_ok"
	}
	return "ok"
}

// askParent writes an extension reply that is a question (a drive's
// EndBackend) and reads the parent's answer, a request of type want.
func (a *agent) askParent(ext any, want string) bool {
	if a.end(appendExt(a.begin("ok"), ext)) != nil {
		return false
	}
	req, err := a.read()
	return err == nil && req.Type == want
}

// begin starts a reply line: its id, its type.
func (a *agent) begin(typ string) []byte {
	b := a.line[:0]
	b = append(b, `{"in_reply_to":`...)
	b = strconv.AppendInt(b, a.id, 10)
	b = append(b, `,"type":`...)
	return appendString(b, typ)
}

// end finishes a reply line with the connection's backend and writes it.
func (a *agent) end(b []byte) error {
	if pid := a.backendPID(); pid != 0 {
		b = append(b, `,"backend":`...)
		b = strconv.AppendUint(b, uint64(pid), 10)
	}
	b = append(b, "}\n"...)
	a.line = b
	a.out.Write(b)
	return a.out.Flush()
}

// writeError writes resp's failure as the contract's error reply.
func (a *agent) writeError(resp Response) error {
	b := a.begin("error")
	code := workerproto.CodeConnectionLost
	switch {
	case resp.unsupported:
		code = workerproto.CodeUnsupported
	case resp.Protocol:
		code = workerproto.CodeProtocol
	case resp.ServerErr && resp.sqlstate == "57014":
		code = workerproto.CodeTimeout
	case resp.ServerErr:
		code = workerproto.CodeServerError
	case resp.Timeout:
		code = workerproto.CodeTimeout
	}
	b = append(b, `,"code":`...)
	b = appendString(b, code)
	b = append(b, `,"text":`...)
	b = appendString(b, resp.Err)
	if code == workerproto.CodeServerError {
		b = append(b, `,"sqlstate":`...)
		b = appendString(b, resp.sqlstate)
	}
	if resp.Rule != "" {
		b = append(b, `,"rule":`...)
		b = appendString(b, resp.Rule)
	}
	if resp.Drive != nil {
		b = appendExt(b, resp.Drive)
	}
	return a.end(b)
}

// appendRows writes a claim's rows: id, event and the fence's field.
func (a *agent) appendRows(b []byte, rows []ClaimRow) []byte {
	b = append(b, `,"rows":[`...)
	token := a.spec.Statements.Token
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendString(b, r.ID)
		b = append(b, `,"event":`...)
		b = appendString(b, r.Event)
		if token {
			b = append(b, `,"token":`...)
			b = appendString(b, r.Token)
		} else {
			b = append(b, `,"gen":`...)
			b = strconv.AppendInt(b, r.Gen, 10)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendExt(b []byte, v any) []byte {
	raw, _ := json.Marshal(v)
	b = append(b, `,"ext":`...)
	return append(b, raw...)
}

// appendString appends s as a JSON string: plain ASCII directly (every
// id, event and type the suite makes), anything else through
// encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
