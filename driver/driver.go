// Package driver is the Go protocol API: a claim protocol written as Go
// code (a team's own repository layer, say) rather than as a SQL file, run
// by the same state machine, scenarios and concurrent mode as the files.
//
// A driver implements Protocol and registers itself by name with Register,
// in an init function or in TestMain before outboxlabtest.Main. The worker
// processes are the test binary re-executed, so the registration runs in
// each of them too and a worker finds the driver by the name it is sent.
// docs/go-drivers.md says what each method must do.
package driver

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is the one connection a method may use: the acting worker's
// connection, or its open transaction when the suite runs the method inside
// one. *pgx.Conn and pgx.Tx satisfy it. A method must not open another
// connection: the suite kills, stops and cuts the worker's, and a statement
// run elsewhere escapes those faults.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Fence is what a claim's generation is.
type Fence int

const (
	// FenceCounter: Claimed.Generation is an integer each claim of a row
	// raises by exactly one (the article's generation column).
	FenceCounter Fence = iota
	// FenceToken: Claimed.Token is an opaque token, new on every claim.
	FenceToken
	// FenceNone: the claim returns no generation (the baseline
	// protocol); stale outcomes cannot be told from current ones.
	FenceNone
)

// Directives are what a SQL file says in its -- outboxlab: lines; the
// model holds the driver to them.
type Directives struct {
	// AnyOrder: claims may take ready rows in any order (order=any);
	// false promises FIFO by enqueue.
	AnyOrder bool
	// Lease is the lease a claim or renew grants at least (lease=); 0
	// means 30s. Only the Age fixture uses it: leases end by Expire.
	Lease time.Duration
	// SessionLease: a claim's lease is a lock its worker's session holds
	// (lease=session); not supported for Go drivers yet.
	SessionLease bool
	// Batch is the most rows one claim may return (batch=); 0 means 1.
	Batch int
	// Lenient lets an expired owner's outcome apply until another worker
	// takes the row (policy=lenient).
	Lenient bool
	// MaxAttempts is the attempt budget (max_attempts=); 0: none.
	MaxAttempts int
	// DeleteDone lets a completed row leave State (done=delete).
	DeleteDone bool
	Fence      Fence
}

// Claimed is one row a claim took.
type Claimed struct {
	ID      string // the row's id, as text; never ""
	EventID string // the event it carries; never ""
	// Generation under FenceCounter; Token under FenceToken.
	Generation int64
	Token      string
	// Worker is the worker that claimed it; set by the suite when it
	// passes the row back to Complete, Retry or Renew.
	Worker string
}

// Row is one row of State: the persisted view of an event.
type Row struct {
	ID      string
	EventID string
	// Status is READY, INPROGRESS, SENT or DEAD.
	Status     string
	Generation int64
	Token      string // under FenceToken; "" before the first claim
	// LeaseExpired is nil while no lease is held, else whether it has
	// ended.
	LeaseExpired *bool
	// Due: a READY row a claim may take now.
	Due bool
}

// Protocol is a claim protocol in Go. Every method gets the context that
// bounds it and the DB it must use; an error it returns is the operation's
// failure (a *pgconn.PgError from the server, or a lost connection).
type Protocol interface {
	Directives() Directives
	// Install creates the protocol's tables. It runs once per run on the
	// harness's connection, whose search_path is the run's own schema:
	// create unqualified names.
	Install(ctx context.Context, db DB) error
	// Enqueue adds a READY, due event.
	Enqueue(ctx context.Context, db DB, eventID string) error
	// Claim takes up to Batch claimable rows for worker, skipping rows
	// another transaction has locked; none (a nil or empty slice) when
	// nothing is claimable.
	Claim(ctx context.Context, db DB, worker string) ([]*Claimed, error)
	// Complete and Retry apply an outcome to a claimed row and say
	// whether it applied: false for a stale owner (the row was reclaimed
	// or its lease ended).
	Complete(ctx context.Context, db DB, c Claimed) (applied bool, err error)
	Retry(ctx context.Context, db DB, c Claimed) (applied bool, err error)
	// State reads every row, in enqueue order.
	State(ctx context.Context, db DB) ([]Row, error)
	// Expire ends the lease on row id now; Due makes a retried row id due
	// now. They are the suite's fixtures: time in a check never passes
	// by itself.
	Expire(ctx context.Context, db DB, id string) error
	Due(ctx context.Context, db DB, id string) error
}

// Renewer is a protocol whose owner can extend its lease.
type Renewer interface {
	Renew(ctx context.Context, db DB, c Claimed) (applied bool, err error)
}

// Rescuer is a protocol with a maintenance pass (the rescue section):
// releasing expired leases, dead-lettering exhausted rows.
type Rescuer interface {
	Rescue(ctx context.Context, db DB, worker string) error
}

// Ager is a protocol whose lease deadline the suite can move back by
// seconds (the age fixture), to hold a claim or renew to Lease.
type Ager interface {
	Age(ctx context.Context, db DB, id string, seconds float64) error
}
