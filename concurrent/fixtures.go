package concurrent

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
)

// ageFraction is how much of the declared lease one Age takes off the
// deadline, as in the state machine: a lease of the declared length
// outlives one Age and not two.
const ageFraction = 0.6

// fixtures is the fixture actor: the clock (expire, age, due), the rescue
// (on the rescuer's process), more events, and reads of the rows, on a
// connection of its own that bypasses the proxies.
type fixtures struct {
	h       *history
	conn    *pgx.Conn
	tainted atomic.Bool // a restart broke the connection
	last    []sut.StateRow
}

// play runs fixtures until the history's budget or time runs out, each
// aimed by the last read of the rows (an expire at a live lease, a due
// at a waiting row), so that reclaims and stale owners keep coming.
func (f *fixtures) play(rng *rand.Rand) {
	for f.h.take() {
		n := rng.IntN(100)
		switch {
		case n < 22 || len(f.last) == 0:
			f.observe()
		case n < 52:
			f.fixture(model.Expire, f.pick(rng, model.InProgress))
		case n < 67:
			f.fixture(model.MakeDue, f.pick(rng, model.Ready))
		case n < 77 && f.h.r.inst.Proto.Has(sut.Age):
			f.fixture(model.Age, f.pick(rng, model.InProgress))
		case n < 87 && f.h.r.rescuer != nil:
			f.rescue()
		case n < 92 && len(f.h.events) < f.h.r.cfg.MaxEvents:
			f.enqueue()
		default:
			f.observe()
		}
		time.Sleep(time.Duration(200+rng.IntN(800)) * time.Microsecond)
	}
}

// pick is an event whose last read status was want, else any event
// whose id a read has shown.
func (f *fixtures) pick(rng *rand.Rand, want model.Status) string {
	var match, known []string
	for _, r := range f.last {
		known = append(known, r.Event)
		if r.Status == want {
			match = append(match, r.Event)
		}
	}
	if len(match) == 0 || rng.IntN(5) == 0 {
		return known[rng.IntN(len(known))]
	}
	return match[rng.IntN(len(match))]
}

// connected is the actor's connection, made anew after a restart.
func (f *fixtures) connected() (*pgx.Conn, error) {
	if f.conn != nil && !f.conn.IsClosed() {
		return f.conn, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := sut.Connect(ctx, f.h.r.inst.ConnString, f.h.r.inst.Statements.Schema)
	if err != nil {
		return nil, err
	}
	f.conn = c
	return c, nil
}

func (f *fixtures) close() {
	if f.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		f.conn.Close(ctx)
		cancel()
		f.conn = nil
	}
}

// observe reads the rows as an operation of the history; a read that
// failed tells nothing and is dropped.
func (f *fixtures) observe() {
	conn, err := f.connected()
	if err != nil {
		time.Sleep(20 * time.Millisecond)
		return
	}
	call := f.h.rec.call(f.h.r.fixtureClient(), Input{Observe: true})
	ctx, cancel := context.WithTimeout(context.Background(), f.h.r.cfg.OpTimeout)
	rows, err := f.h.r.inst.Driver().ReadState(ctx, conn)
	cancel()
	if err != nil {
		f.h.rec.drop(call)
		f.lost(conn, err)
		return
	}
	views := make([]model.RowView, len(rows))
	for i, r := range rows {
		views[i] = r.RowView
	}
	f.h.rec.ret(call, Output{Rows: views})
	f.last = rows
	f.h.mu.Lock()
	for _, r := range rows {
		f.h.ids[r.Event] = r.ID
	}
	f.h.mu.Unlock()
}

// lost handles an error on the actor's connection: after a restart it
// reconnects; any other error is the protocol's (a fixture or state query
// that fails on its own).
func (f *fixtures) lost(conn *pgx.Conn, err error) bool {
	if f.tainted.Swap(false) || f.h.restarting() || conn.IsClosed() && !sut.IsServerError(err) {
		f.close()
		return true
	}
	f.h.fail("fixture failed", fmt.Sprintf("the fixture actor's statement failed: %v", err))
	return false
}

// fixture runs expire, due or age on event's row.
func (f *fixtures) fixture(kind model.Kind, event string) {
	conn, err := f.connected()
	if err != nil {
		time.Sleep(20 * time.Millisecond)
		return
	}
	section := map[model.Kind]string{model.Expire: sut.Expire, model.MakeDue: sut.Due, model.Age: sut.Age}[kind]
	f.h.mu.Lock()
	id, known := f.h.ids[event]
	f.h.mu.Unlock()
	if !known {
		return // enqueued since the last read: no id to send yet
	}
	args := sut.Args{ID: id, Worker: "harness"}
	if kind == model.Age {
		args.Seconds = ageFraction * f.h.r.inst.Proto.Lease.Seconds()
	}
	f.exec(model.Op{Kind: kind, Event: event}, section, args, conn)
}

// enqueue adds the next event.
func (f *fixtures) enqueue() {
	conn, err := f.connected()
	if err != nil {
		return
	}
	event := fmt.Sprintf("e%d", len(f.h.events)+1)
	f.exec(model.Op{Kind: model.Enqueue, Event: event}, sut.Enqueue, sut.Args{EventID: event, Worker: "harness"}, conn)
	// The name is spent even when the outcome is unknown (a restart): the
	// row may exist, and the same name again would break its unique key.
	f.h.events = append(f.h.events, event)
}

// exec runs a section as the recorded op; an error after a restart is an
// unknown outcome, any other the fixture's failure. It reports whether
// the op was recorded with a known outcome.
func (f *fixtures) exec(op model.Op, section string, args sut.Args, conn *pgx.Conn) bool {
	epoch := f.h.epoch.Load()
	call := f.h.rec.call(f.h.r.fixtureClient(), Input{Op: op})
	ctx, cancel := context.WithTimeout(context.Background(), f.h.r.cfg.OpTimeout)
	err := f.h.r.inst.Driver().Exec(ctx, conn, section, args)
	cancel()
	if err == nil {
		f.h.rec.ret(call, Output{Out: model.Outcome{Kind: model.OK}})
		return true
	}
	if f.h.epoch.Load() != epoch || f.tainted.Load() || f.h.restarting() {
		f.tainted.Store(false)
		f.close()
		f.h.rec.ret(call, Output{Out: model.Outcome{Kind: model.Unknown}})
		f.h.rec.fault(call, "db_restart")
		return false
	}
	f.h.rec.ret(call, Output{Out: model.Outcome{Kind: model.Unknown}})
	f.h.fail(section+" fixture failed", fmt.Sprintf("%s failed: %v", op, err))
	return false
}

// rescue runs the rescue section on the rescuer's process.
func (f *fixtures) rescue() {
	f.h.do(f.h.r.rescuer, model.Op{Kind: model.Rescue}, worker.Request{Op: "rescue"})
}
