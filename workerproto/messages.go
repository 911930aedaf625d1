// Package workerproto is the suite's side of the worker protocol
// (docs/worker-protocol.md): a system under test that is an executable in
// any language, started once per simulated worker and driven over its
// stdin and stdout, one JSON object a line. It holds the messages, the
// error codes and the client that starts such a process and exchanges
// lines with it; it knows nothing of the state machine, so that every part
// of the suite that drives a worker (the machine's worker pool, the
// install, the bench) is one client of the same contract.
package workerproto

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Version is the protocol version init sends.
const Version = 1

// The request types.
const (
	Init      = "init"
	Install   = "install"
	Claim     = "claim"
	Complete  = "complete"
	Retry     = "retry"
	Renew     = "renew"
	Rescue    = "rescue"
	Begin     = "begin"
	Commit    = "commit"
	Rollback  = "rollback"
	Reconnect = "reconnect"
)

// The features init_ok may list: the optional requests a worker serves.
const (
	FeatureRenew   = "renew"
	FeatureRescue  = "rescue"
	FeatureTx      = "tx"
	FeatureInstall = "install"
	// FeatureExpire: a begin may name the row to expire (Request.Expire)
	// rather than carry the fixture's SQL.
	FeatureExpire = "expire"
)

// The error codes.
const (
	CodeServerError    = "server_error"
	CodeConnectionLost = "connection_lost"
	CodeTimeout        = "timeout"
	CodeProtocol       = "protocol"
	CodeUnsupported    = "unsupported"
)

// Directives are the protocol file's directives as init carries them.
type Directives struct {
	Order       string `json:"order"`
	Batch       int    `json:"batch"`
	Policy      string `json:"policy"`
	MaxAttempts int    `json:"max_attempts"`
	Done        string `json:"done"`
	Lease       string `json:"lease"`
	Fence       string `json:"fence"`
}

// Fixture is the statement a begin runs before it replies.
type Fixture struct {
	SQL  string   `json:"sql"`
	Args []string `json:"args"`
}

// Request is one line the suite writes. ID is set by the client.
type Request struct {
	ID   int64  `json:"id"`
	Type string `json:"type"`

	Protocol        int         `json:"protocol,omitempty"`
	Worker          string      `json:"worker,omitempty"`
	DSN             string      `json:"dsn,omitempty"`
	Schema          string      `json:"schema,omitempty"`
	OpTimeoutMS     int64       `json:"op_timeout_ms,omitempty"`
	WaitTimeoutMS   int64       `json:"wait_timeout_ms,omitempty"`
	ApplicationName string      `json:"application_name,omitempty"`
	Directives      *Directives `json:"directives,omitempty"`

	// Row is an outcome's row object, exactly as the claim returned it.
	Row     json.RawMessage `json:"row,omitempty"`
	Fixture *Fixture        `json:"fixture,omitempty"`
	MayWait bool            `json:"may_wait,omitempty"`

	// Expire is a begin's row to expire first, for a worker that lists
	// the feature expire: it runs its own expire fixture (a Go driver's
	// has no SQL to send as a fixture).
	Expire string `json:"expire,omitempty"`
	// Ext is an extension request's own object (the suite's Go workers'
	// init, split, drive, publish and consume: worker/serve.go).
	Ext json.RawMessage `json:"ext,omitempty"`
}

// Reply is one line the worker writes.
type Reply struct {
	InReplyTo *int64 `json:"in_reply_to"`
	Type      string `json:"type"`

	Features []string          `json:"features"`
	Fence    string            `json:"fence"`
	Rows     []json.RawMessage `json:"rows"`
	Applied  *bool             `json:"applied"`

	Code     string `json:"code"`
	Text     string `json:"text"`
	SQLState string `json:"sqlstate"`
	// Rule is a protocol error's rule, the same whatever the particulars
	// in Text (a row count, an event, a stack): optional, Text's first
	// line when absent.
	Rule string `json:"rule"`

	// Backend is the server pid of the worker's connection, optional (0:
	// none or unknown). Without it the suite finds the backend by its
	// application_name.
	Backend uint32 `json:"backend"`
	// Ext is an extension reply's own object.
	Ext json.RawMessage `json:"ext"`
}

// replyTypes are the reply types a request may get besides error.
func replyType(request string) string {
	switch request {
	case Init:
		return "init_ok"
	case Install:
		return "install_ok"
	case Claim:
		return "claim_ok"
	}
	return "ok"
}

// Row is one claimed row: what the suite reads of it, and the object
// itself, sent back with the row's outcomes.
type Row struct {
	ID    string
	Event string
	Gen   int64
	Token string
	Raw   json.RawMessage
}

// ParseRow reads a claimed row under the fence the worker declared.
func ParseRow(raw json.RawMessage, fence string) (Row, error) {
	// Into a struct, not a map: a claim's rows are read on every step.
	var fields struct{ ID, Event, Gen, Token json.RawMessage }
	if err := json.Unmarshal(raw, &fields); err != nil || len(raw) == 0 || raw[0] != '{' {
		return Row{}, fmt.Errorf("a claimed row is not a JSON object: %s", raw)
	}
	r := Row{Raw: raw}
	var ok bool
	if r.ID, ok = text(fields.ID); !ok || r.ID == "" {
		return Row{}, fmt.Errorf("a claimed row has no id string: %s", raw)
	}
	if r.Event, ok = text(fields.Event); !ok || r.Event == "" {
		return Row{}, fmt.Errorf("a claimed row has no event: %s", raw)
	}
	switch fence {
	case "counter":
		g, _ := text(fields.Gen)
		n, err := strconv.ParseInt(g, 10, 64)
		if err != nil {
			return Row{}, fmt.Errorf("a claimed row has no integer gen under fence=counter: %s", raw)
		}
		r.Gen = n
	case "token":
		if r.Token, ok = text(fields.Token); !ok || r.Token == "" {
			return Row{}, fmt.Errorf("a claimed row has no token under fence=token: %s", raw)
		}
	}
	return r, nil
}

// text is a JSON string's value, or a number's text (an event id a
// library keeps as a number).
func text(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil && n != "" {
		return n.String(), true
	}
	return "", false
}

// Indefinite reports whether an error reply leaves the outcome unknown:
// connection_lost and timeout, and a server_error the contract says to
// take as a lost connection (no SQLSTATE, class 08, 57014 or class 57P).
func Indefinite(r Reply) bool {
	switch r.Code {
	case CodeConnectionLost, CodeTimeout:
		return true
	case CodeServerError:
		return !DefiniteSQLState(r.SQLState)
	}
	return false
}

// DefiniteSQLState reports whether a server_error with this SQLSTATE is a
// definite refusal.
func DefiniteSQLState(s string) bool {
	if len(s) != 5 {
		return false
	}
	return !strings.HasPrefix(s, "08") && s != "57014" && !strings.HasPrefix(s, "57P")
}
