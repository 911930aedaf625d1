// Package scenarios reproduces the article's six hand-written tests as a
// table that runs against any protocol file. They are the yardstick the
// state machine is measured against: each checks one story, with fixed
// steps, where the state machine searches all interleavings.
package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
)

// Scenario is one of the article's tests.
type Scenario struct {
	Name string
	Says string // what it checks, one line
	Run  func(ctx context.Context, e *Env) error
}

// All lists the six scenarios in the article's order.
var All = []Scenario{
	{"kill_and_recover", "a worker SIGKILLed after committing its claim: the row is reclaimable once the lease expires", KillAndRecover},
	{"open_claim_transaction", "an uncommitted claim is skipped by another connection, and available again after rollback", OpenClaimTransaction},
	{"stale_complete_rejected", "an old generation's complete does not land on a newer live claim", StaleCompleteRejected},
	{"stale_retry_rejected", "an old generation's retry does not land on a newer live claim", StaleRetryRejected},
	{"retry_after_sent_rejected", "a retry cannot move a SENT row back to READY", RetryAfterSentRejected},
	{"owner_outcomes_apply", "the current owner's retry and complete apply, and a retried event waits for its backoff", OwnerOutcomesApply},
}

// Result is one scenario's verdict on one protocol.
type Result struct {
	Protocol string `json:"protocol"`
	Scenario string `json:"scenario"`
	Result   string `json:"result"` // pass or fail
	Detail   string `json:"detail,omitempty"`
}

// Env is what a scenario works with: the protocol installed in its own
// schema, reset to two events before each scenario.
type Env struct {
	Inst *sut.Instance
	St   *sut.Statements
}

// Events every scenario starts with, as in the article.
var Events = []string{"event-001", "event-002"}

// Applies says why the six scenarios cannot judge a protocol, or nil: they
// build stale generations by arithmetic on the article's counter, which a
// fence=token protocol does not have, and end leases with the expire
// fixture, which a session lease (lease=session) does not have.
func Applies(p *sut.Protocol) error {
	switch {
	case p.Fence == sut.FenceToken:
		return fmt.Errorf("%s: the article's six scenarios work with a counter generation (fence=counter); "+
			"a fence=token protocol is judged by outboxlab check", p.File)
	case p.SessionLease:
		return fmt.Errorf("%s: the article's six scenarios expire a stored lease; "+
			"a session lease (lease=session) ends with its session, and is judged by outboxlab check", p.File)
	}
	return nil
}

// Run runs every scenario against an installed protocol; none when they do
// not apply to it (Applies).
func Run(ctx context.Context, inst *sut.Instance) []Result {
	if Applies(inst.Proto) != nil {
		return nil
	}
	var out []Result
	for _, sc := range All {
		out = append(out, RunOne(ctx, inst, sc))
	}
	return out
}

// RunOne resets the tables and runs one scenario.
func RunOne(ctx context.Context, inst *sut.Instance, sc Scenario) Result {
	r := Result{Protocol: inst.Proto.Name, Scenario: sc.Name, Result: "pass"}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := inst.Reset(ctx, Events)
	if err == nil {
		err = sc.Run(ctx, &Env{Inst: inst, St: inst.Statements})
	}
	if err != nil {
		r.Result, r.Detail = "fail", err.Error()
	}
	return r
}

// conn opens another connection to the protocol's schema.
func (e *Env) conn(ctx context.Context) (*pgx.Conn, error) {
	return sut.Connect(ctx, e.Inst.ConnString, e.St.Schema)
}

// row reads the persisted state of one event.
func (e *Env) row(ctx context.Context, event string) (sut.StateRow, error) {
	rows, err := e.Inst.Driver().ReadState(ctx, e.Inst.Conn)
	if err != nil {
		return sut.StateRow{}, fmt.Errorf("read state: %w", err)
	}
	for _, r := range rows {
		if r.Event == event {
			return r, nil
		}
	}
	if e.Inst.Proto.DeleteDone {
		// done=delete: a completed event may leave the state. Only a
		// complete the scenario saw apply can have taken it away; the
		// scenario goes on as if it read SENT.
		return sut.StateRow{RowView: model.RowView{Event: event, Status: model.Sent, HasGen: e.St.HasGen}}, nil
	}
	return sut.StateRow{}, fmt.Errorf("state has no row for %s", event)
}

// expire ends row's lease with the expire fixture and, for a protocol
// whose expired claims come back through its rescue (a reaper), runs the
// rescue and makes the row due: the article's "the lease expired" is, for
// such a queue, the lease expired and the reaper ran.
func (e *Env) expire(ctx context.Context, row sut.StateRow) error {
	if err := e.fixture(ctx, sut.Expire, row.ID); err != nil {
		return err
	}
	if !e.Inst.Proto.Has(sut.Rescue) {
		return nil
	}
	if err := e.Inst.Driver().Rescue(ctx, e.Inst.Conn, "rescuer"); err != nil {
		return fmt.Errorf("rescue: %w", err)
	}
	return e.fixture(ctx, sut.Due, row.ID)
}

// claim runs the claim on the harness's own connection, as another worker.
func (e *Env) claim(ctx context.Context, q sut.Querier, worker string) (sut.ClaimResult, error) {
	c, err := e.Inst.Driver().Claim(ctx, q, worker)
	if err != nil {
		return c, fmt.Errorf("claim as %s: %w", worker, err)
	}
	return c, nil
}

func (e *Env) apply(ctx context.Context, section string, c sut.ClaimResult, gen int64, worker string) (bool, error) {
	ok, err := e.Inst.Driver().Apply(ctx, e.Inst.Conn, section, sut.Args{ID: c.ID, Gen: gen, Worker: worker})
	if err != nil {
		return false, fmt.Errorf("%s as %s: %w", section, worker, err)
	}
	return ok, nil
}

func (e *Env) fixture(ctx context.Context, section, id string) error {
	if err := e.Inst.Driver().Exec(ctx, e.Inst.Conn, section, sut.Args{ID: id, Worker: "harness"}); err != nil {
		return fmt.Errorf("%s fixture: %w", section, err)
	}
	return nil
}

// generationOf is the generation a claim carries: the protocol's own, or
// for a protocol without one, the count of claims so far (here: known).
func generationOf(c sut.ClaimResult, claimsSoFar int64) int64 {
	if c.Gen != 0 {
		return c.Gen
	}
	return claimsSoFar
}
