// Package model is the pure ownership model every protocol is held to: the
// policy of docs/protocol-format.md as a step function on a value type.
// No database, no clock, no randomness: a State and an Op give the outcomes
// the policy allows and the state after each.
package model

import (
	"slices"
	"strconv"
)

// Status is a row's committed status, as the protocol's state query names it.
type Status string

const (
	Ready      Status = "READY"
	InProgress Status = "INPROGRESS"
	Sent       Status = "SENT"
	// Dead is an event whose attempt budget (max_attempts) is spent: terminal
	// and visible, never claimed again.
	Dead Status = "DEAD"
)

// Order is the claim order a protocol promises.
type Order string

const (
	FIFO Order = "fifo" // the earliest-enqueued eligible row
	Any  Order = "any"  // any eligible row
)

// Policy is what a protocol's directives promise, and what the model holds
// it to (docs/protocol-format.md). The zero value but Order is version 1:
// one row a claim, the strict policy, no attempt budget, SENT rows kept, no
// rescue section.
type Policy struct {
	Order Order
	// Batch is the most rows one claim takes (batch=); 0 means 1.
	Batch int
	// Lenient lets an expired owner's outcome apply until another claim or
	// a rescue takes the row (policy=lenient).
	Lenient bool
	// MaxAttempts is the attempt budget (max_attempts=); 0: none.
	MaxAttempts int
	// Delete lets a completed event leave the state query (done=delete).
	Delete bool
	// Rescue is set when the protocol has a rescue section: an expired
	// claim may then wait for a rescue to return it before it is claimable.
	Rescue bool
	// SessionLease: a claim's lease is a lock the claiming worker's
	// session holds (lease=session): it ends when that session ends (a
	// kill, EndSession, a server restart, a connection a fault cut), not
	// by the clock (session.go).
	SessionLease bool
	// Relax lists the properties a profile no longer holds the protocol
	// to: for each, the model allows what the property forbids too (see
	// relax.go). Zero for an ordinary check.
	Relax Property
}

// String is the policy as its directives: order=fifo batch=3 lenient
// max_attempts=3 delete rescue (version-1 defaults left out).
func (p Policy) String() string {
	s := "order=" + string(p.Order)
	if p.batch() > 1 {
		s += " batch=" + strconv.Itoa(p.Batch)
	}
	if p.Lenient {
		s += " lenient"
	}
	if p.MaxAttempts > 0 {
		s += " max_attempts=" + strconv.Itoa(p.MaxAttempts)
	}
	if p.Delete {
		s += " delete"
	}
	if p.Rescue {
		s += " rescue"
	}
	if p.SessionLease {
		s += " lease=session"
	}
	if p.Relax != 0 {
		s += " relax=" + p.Relax.String()
	}
	return s
}

// batch is the most rows one claim takes.
func (p Policy) batch() int { return max(p.Batch, 1) }

// Row is one event's committed state plus the lock of an open claim
// transaction, if one holds it.
type Row struct {
	Event  string // logical event id, e.g. "e1"; rows are kept in enqueue order
	Status Status
	Gen    int64 // claims committed on this row so far (the fencing token)
	// Owner is the ID of the received claim (State.Claims) that holds the
	// row's current generation, 0 when no worker received it (a claim
	// whose reply was lost). Under fence=token two claims never share a
	// generation, and after a rewind a counter's value may be reissued:
	// the claim, not the count, is who owns the row.
	Owner     int
	LeaseLive bool // meaningful only when Status == InProgress
	// Aged is set once Age has moved a live lease's deadline back by 60%
	// of the declared lease: at most 40% of it is left, and the next Age
	// may expire it. A claim or an applied renew makes the lease fresh.
	Aged bool
	// Renewed is set when the live lease was last granted by a renew
	// rather than the claim: a lease found too short names its grantor.
	Renewed  bool
	Due      bool // meaningful only when Status == Ready
	LockedBy string
	// Holder is the worker whose session holds a live session lease on
	// the row (Policy.SessionLease), "" otherwise.
	Holder string
	// Rescheduled marks a live session lease whose job a stale owner's
	// retry moved to a later run (Policy.SessionLease, only in a profile
	// that relaxes fencing): the stale owner could not end the holder's
	// lock, so the row stays the holder's, and once that lease ends it
	// waits for its backoff (READY, not due) until a due fixture.
	Rescheduled bool
	// ReadBy is the worker whose split claim's first part found the row
	// claimable or spent (split_claim.go): its last part may take, or
	// bury, what that read chose. "" for every row outside a claim split.
	ReadBy string
	ReadAs ReadKind // what that read found the row to be
}

// ReadKind is what a split claim's first part found a row to be
// (split_claim.go).
type ReadKind int

const (
	ReadClaimable     ReadKind = iota
	ReadClaimableHeld          // the same, while another open transaction held it
	ReadSpent                  // an expired last attempt, to bury
	ReadSpentHeld              // the same, while another open transaction held it
)

// Grant is one row a claim returned, at the generation it returned.
type Grant struct {
	Event string
	Gen   int64
}

// Claim is what a worker received from a claim: the row and its generation.
// ID is the claim's own identity: its place in State.Claims, counted from 1,
// which every state a machine keeps for one history agrees on (claims are
// recorded only when a worker received them, which every possible state
// saw alike). Two claims may share a worker, an event and a generation (a
// rewind reissues a count; a protocol without a generation is counted by
// the model, differently in different possible states): never an ID.
type Claim struct {
	Worker string
	Event  string
	Gen    int64
	ID     int
}

// Same reports whether c and d are the same claim as a worker knows it
// (worker, event, generation), whatever their IDs.
func (c Claim) Same(d Claim) bool {
	return c.Worker == d.Worker && c.Event == d.Event && c.Gen == d.Gen
}

// Kind names an operation.
type Kind string

const (
	Enqueue  Kind = "Enqueue"  // Event
	ClaimOp  Kind = "Claim"    // Worker; autocommit claim
	Begin    Kind = "Begin"    // Worker; open a transaction and claim inside it
	Commit   Kind = "Commit"   // Worker; commit the open claim transaction
	Rollback Kind = "Rollback" // Worker; roll the open claim transaction back
	Complete Kind = "Complete" // Worker, Event, Gen
	Retry    Kind = "Retry"    // Worker, Event, Gen
	Renew    Kind = "Renew"    // Worker, Event, Gen
	Expire   Kind = "Expire"   // Event; fixture: the row's lease is expired from now on
	MakeDue  Kind = "MakeDue"  // Event; fixture: the waiting row is due from now on
	Age      Kind = "Age"      // Event; fixture: the row's lease deadline moves back by 60% of the declared lease
	Rescue   Kind = "Rescue"   // the rescuer's maintenance pass (a reaper): expired claims back to READY or DEAD
	Pause    Kind = "Pause"    // Worker; SIGSTOP
	Resume   Kind = "Resume"   // Worker; SIGCONT
	Kill     Kind = "Kill"     // Worker; SIGKILL: its open transaction rolls back
	Respawn  Kind = "Respawn"  // Worker; a new process for a killed worker
	// EndSession ends a worker's database session while its process lives
	// on and reconnects: its open transaction rolls back and, under
	// lease=session, every lease the session held ends (session.go).
	EndSession Kind = "EndSession" // Worker
	Restart    Kind = "Restart"    // the server crashed and restarted: every open transaction rolls back
	// The faults of the topologies that forget (PROTOCOL-FORMAT.md,
	// "Version 3"); see rewind.go.
	Flush    Kind = "Flush"    // async-commit: every commit so far is flushed, the WAL writer stops
	Stall    Kind = "Stall"    // async-standby: every commit so far is on the standby, then replication stops
	Crash    Kind = "Crash"    // async-commit: the server died and restarted without its unflushed WAL
	Failover Kind = "Failover" // the primary died and the standby took over, without what it had not received
)

// Op is one step of a program.
type Op struct {
	Kind   Kind
	Worker string
	Event  string
	Gen    int64
	// Claim is the ID of the claim a complete, retry or renew is for
	// (Claim.ID). 0, as in a program read from text, means the claim
	// Fence names (State.ClaimOf).
	Claim int
	// Fence is how a program line names the claim an outcome is for: by
	// the protocol's own fence (fence.go). Printing only: the model judges
	// by Claim, or by what Fence resolves to.
	Fence Fence
	// Part is set on the two halves of a complete, retry or renew split at
	// a statement boundary (split.go); zero for a whole step.
	Part Part
}

// OutcomeKind is what a step returned.
type OutcomeKind string

const (
	OK       OutcomeKind = "ok"       // a step with nothing to report
	Claimed  OutcomeKind = "claimed"  // Event, Gen
	Empty    OutcomeKind = "empty"    // a claim found nothing claimable
	Applied  OutcomeKind = "applied"  // complete/retry/renew returned a row
	Rejected OutcomeKind = "rejected" // complete/retry/renew returned no row
	Unknown  OutcomeKind = "unknown"  // the connection failed: applied or not, nobody knows yet
	// Waiting: a complete, retry or renew whose statement waits on the
	// row lock of another worker's open claim transaction (On). It is
	// judged when that transaction ends, against the row as it is then.
	Waiting OutcomeKind = "waiting"
	// Rewound: a Crash or Failover that lost Lost acknowledged commits
	// (decided by the read after it, see rewind.go).
	Rewound OutcomeKind = "rewound"
)

// Outcome is the result of a step. A claim's first row is Event and Gen;
// a batch claim's other rows are in More, in enqueue order.
type Outcome struct {
	Kind  OutcomeKind
	Event string
	Gen   int64
	More  []Grant
	On    string // Waiting: the worker whose open transaction holds the row
	Lost  int    // Rewound: how many acknowledged commits the rewind lost
	// Shown is the fence a claim's line shows (fence.go), with Tokens
	// under fence=token, a grant's each: printing only, never compared.
	Shown  FenceKind
	Tokens []string
}

// Grants are every row a claim returned, in enqueue order.
func (o Outcome) Grants() []Grant {
	if o.Kind != Claimed {
		return nil
	}
	return append([]Grant{{o.Event, o.Gen}}, o.More...)
}

// Equal reports whether two outcomes are the same.
func (o Outcome) Equal(p Outcome) bool {
	return o.Kind == p.Kind && o.Event == p.Event && o.Gen == p.Gen && slices.Equal(o.More, p.More) && o.On == p.On && o.Lost == p.Lost
}

// Transition is one outcome the policy allows for a step and the state after it.
type Transition struct {
	Out  Outcome
	Next State
}

// RowView is a row as persisted: what the protocol's state query returns,
// and what State.View computes from the model. LeaseExpired is meaningful
// only for INPROGRESS rows and Due only for READY rows; HasGen is false for
// protocols whose claim returns no generation.
type RowView struct {
	Event        string
	Status       Status
	Gen          int64
	HasGen       bool
	LeaseExpired bool
	LeaseHeld    bool // lease_expired is not NULL
	Due          bool
}

// SameOutcome compares outcomes; without a generation (hasGen false) a
// claim is compared on its rows only.
func SameOutcome(want, got Outcome, hasGen bool) bool {
	if !hasGen {
		want, got = withoutGens(want), withoutGens(got)
	}
	return want.Equal(got)
}

// withoutGens is a claim's outcome with every generation zeroed: what a
// protocol without a generation can be compared on.
func withoutGens(o Outcome) Outcome {
	o.Gen = 0
	o.More = slices.Clone(o.More)
	for i := range o.More {
		o.More[i].Gen = 0
	}
	return o
}
