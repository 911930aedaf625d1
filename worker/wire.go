// Package worker runs each simulated outbox worker as a real OS process with
// its own PostgreSQL connection, driven over a pipe one request at a time, so
// that SIGKILL, SIGSTOP and SIGCONT act on a real process and a real backend.
// In the concurrent mode a worker drives its part of a history by itself
// and records each operation on a board of shared memory (drive.go,
// board.go), where a SIGKILL cannot take it.
//
// The process runs with OUTBOXLAB_WORKER set, and calls MainIfWorker first
// thing: for a protocol file it is cmd/outboxlab-worker, which links pgx
// and this package only; for a Go driver or a relay, the current
// executable re-executed (a test binary's TestMain and the outboxlab
// command both call MainIfWorker), the only one that has the driver or the
// broker client (executable.go).
package worker

import (
	"time"

	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/workerproto"
)

const envVar = "OUTBOXLAB_WORKER"

// Spec is what a worker process needs: where to connect and what to run.
type Spec struct {
	Name       string
	ConnString string // may point at a fault proxy rather than the server
	Statements *sut.Statements
	// OpTimeout bounds every statement; a claim that waits on a lock longer
	// than this is reported as blocked.
	OpTimeout time.Duration
	// Board and Slot are where a drive records (board.go): the parent's
	// board and this worker's slot on it ("" without).
	Board string `json:",omitempty"`
	Slot  int    `json:",omitempty"`
	// Pooled says ConnString reaches the server through a connection
	// pooler (pgserver.Server.Pooled): the worker prepares no named
	// statement (the connection string's query mode needs none), and the
	// harness finds its server backend by its name (Backend).
	Pooled bool `json:",omitempty"`
	// Relay says the worker runs relay mode's publish and consume, which
	// only the harness's own binary links (executable.go).
	Relay bool `json:",omitempty"`
	// App is the application_name of the process's connections, set by
	// Spawn: one per process (appName).
	App string `json:",omitempty"`
}

// Request is one line the parent writes.
type Request struct {
	Op string `json:"op"` // claim, begin, commit, rollback, complete, retry, renew, rescue, reconnect
	// ID is the row an outcome acts on, or for a begin the row whose
	// lease the transaction expires before it claims (Begin(expire e)).
	ID  string `json:"id,omitempty"`
	Gen int64  `json:"gen,omitempty"`
	// Token is @generation under fence=token (sut.Statements.Token): the
	// claim's token as text, sent back exactly.
	Token string `json:"token,omitempty"`
	// MayWait marks a statement the parent lets wait on another
	// transaction's row lock (a waiting step): it gets WaitTimeout, not
	// the statement timeout, since the wait lasts until the holder ends.
	MayWait bool `json:"may_wait,omitempty"`
	// Relay is the publish or consume op's request (relay.go).
	Relay *RelayRequest `json:"relay,omitempty"`
	// Drive is an OpDrive's draws and workload (drive.go).
	Drive *DriveRequest `json:"drive,omitempty"`
	// Split is an OpSplit's or OpFinish's section and split point
	// (split.go).
	Split *SplitRequest `json:"split,omitempty"`
	// fixture is what a contract begin from outside the suite may carry
	// (the Go worker's own begin names the row instead).
	fixture *workerproto.Fixture
}

// WaitTimeout bounds a statement sent with MayWait.
const WaitTimeout = 20 * time.Second

// Response is one line the worker writes back.
type Response struct {
	// Found, ID, Event, Gen and Token are a claim's first row; Rows all
	// of them (up to the protocol's batch), in the order the claim
	// returned them.
	Found   bool       `json:"found,omitempty"`
	ID      string     `json:"id,omitempty"`
	Event   string     `json:"event,omitempty"`
	Gen     int64      `json:"gen,omitempty"`
	Token   string     `json:"token,omitempty"`
	Rows    []ClaimRow `json:"rows,omitempty"`
	Applied bool       `json:"applied,omitempty"`
	Err     string     `json:"err,omitempty"`
	// ServerErr is set when the server ran the statement and reported an
	// error; an error that is neither this nor Protocol (connection lost,
	// timeout) leaves the outcome unknown.
	ServerErr bool `json:"server_err,omitempty"`
	// Protocol is set when the statement ran and returned what its
	// section may not (two rows from a claim, a NULL generation): the
	// protocol's own failure, with the connection intact.
	Protocol bool `json:"protocol,omitempty"`
	// Rule is a Protocol failure's rule, the same whatever its particulars
	// (a row count, an event): sut.ProtocolError's, or the worker's.
	Rule string `json:"rule,omitempty"`
	// Timeout is set when the statement hit OpTimeout (a claim blocked on a
	// lock, or a black-holed connection).
	Timeout bool `json:"timeout,omitempty"`
	// Backend is the server process id of the worker's connection (0 when
	// it has none), so the parent can wait for it to end after a kill.
	Backend uint32 `json:"backend,omitempty"`
	// Relay is the publish or consume op's answer (relay.go).
	Relay *RelayReply `json:"relay,omitempty"`
	// Drive is a drive's answer or question (drive.go).
	Drive *DriveReply `json:"drive,omitempty"`
	// sqlstate is a server error's code; unsupported marks a request
	// type the worker does not serve (the contract's codes).
	sqlstate    string
	unsupported bool
}

// ClaimRow is one row a claim returned.
type ClaimRow struct {
	ID    string `json:"id"`
	Event string `json:"event"`
	Gen   int64  `json:"gen"`
	// Token is the row's token under fence=token (sut.ClaimResult.Token).
	Token string `json:"token,omitempty"`
}

// BrokenRule is a Protocol failure's rule: Rule, or the text of an error
// that came without one.
func (r Response) BrokenRule() string {
	if r.Rule != "" {
		return r.Rule
	}
	return r.Err
}
