package sut

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxlab/outboxlab/driver"
	"github.com/outboxlab/outboxlab/model"
)

// InstallDriver installs the Go driver registered as name, as Install
// installs a file: a fresh schema, the search_path set to it, and the
// driver's Install run there (its DDL). The Instance's Proto carries the
// driver's directives and a Section for each operation it has, so that
// the machine asks Proto.Has as it does of a file; its Statements carry
// the traits and the name, which is what a worker is sent.
func InstallDriver(ctx context.Context, connString, name string) (*Instance, error) {
	p, err := driver.Lookup(name)
	if err != nil {
		return nil, err
	}
	proto, err := protocolOf(name, p)
	if err != nil {
		return nil, err
	}
	d := p.Directives()
	schema := NewSchemaName()
	conn, err := Connect(ctx, connString, schema)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	st := &Statements{Schema: schema, Batch: proto.Batch, HasGen: d.Fence != driver.FenceNone,
		Token: d.Fence == driver.FenceToken, GoDriver: name}
	inst := &Instance{Proto: proto, ConnString: connString, Conn: conn, Statements: st,
		driver: &goDriver{name: name, p: p, st: st}}
	if err := inst.installDriver(ctx, p); err != nil {
		inst.Close()
		return nil, err
	}
	return inst, nil
}

func (inst *Instance) installDriver(ctx context.Context, p driver.Protocol) (err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	schema := inst.Statements.Schema
	sweepAbandonedSchemas(ctx, inst.Conn)
	if _, err := inst.Conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return fmt.Errorf("create schema %s: %w", schema, err)
	}
	if _, err := inst.Conn.Exec(ctx, "COMMENT ON SCHEMA "+schema+" IS "+quoteLiteral(schemaOwner())); err != nil {
		return fmt.Errorf("label schema %s: %w", schema, err)
	}
	g := inst.driver.(*goDriver)
	if err := g.install(ctx, inst.Conn); err != nil {
		return fmt.Errorf("Go driver %s: Install: %w", inst.Proto.Name, err)
	}
	plan, err := planReset(ctx, inst.Conn, schema, "")
	if err != nil {
		return fmt.Errorf("plan reset: %w", err)
	}
	inst.reset = plan
	return nil
}

func (g *goDriver) install(ctx context.Context, q Querier) (err error) {
	d, err := db(q)
	if err != nil {
		return err
	}
	defer g.guard("Install", &err)
	return g.p.Install(ctx, d)
}

// resetDriver is Reset for a Go driver: the tables emptied as a file's
// are, then each event enqueued by the driver's own Enqueue.
func (inst *Instance) resetDriver(ctx context.Context, events []string) error {
	if err := inst.EnsureConn(ctx); err != nil {
		return err
	}
	clear := inst.reset.clear
	if _, err := inst.Conn.Exec(ctx, clear); err != nil {
		if inst.reset.fallback == "" || !IsServerError(err) {
			return fmt.Errorf("reset: %w", err)
		}
		// A foreign key between the driver's tables.
		inst.reset.clear = inst.reset.fallback
		if _, err := inst.Conn.Exec(ctx, inst.reset.clear); err != nil {
			return fmt.Errorf("reset: %w", err)
		}
	}
	for _, e := range events {
		if err := inst.driver.Exec(ctx, inst.Conn, Enqueue, Args{EventID: e, Worker: "harness"}); err != nil {
			return fmt.Errorf("reset: enqueue %s: %w", e, err)
		}
	}
	return nil
}

// protocolOf is the Protocol a Go driver's directives make, checked as a
// file's directive lines are.
func protocolOf(name string, p driver.Protocol) (*Protocol, error) {
	d := p.Directives()
	proto := &Protocol{Name: name, File: "driver:" + name, Order: model.FIFO, Lease: d.Lease, Batch: max(d.Batch, 1),
		Lenient: d.Lenient, MaxAttempts: d.MaxAttempts, DeleteDone: d.DeleteDone, Sections: map[string]*Section{}}
	if d.AnyOrder {
		proto.Order = model.Any
	}
	if proto.Lease == 0 {
		proto.Lease = DefaultLease
	}
	if d.Fence == driver.FenceToken {
		proto.Fence = FenceToken
	}
	switch {
	case d.SessionLease:
		return nil, fmt.Errorf("Go driver %s: SessionLease is not supported for Go drivers yet", name)
	case d.Batch < 0 || d.Batch > maxBatch:
		return nil, fmt.Errorf("Go driver %s: Batch %d: want 0 to %d", name, d.Batch, maxBatch)
	case d.MaxAttempts < 0 || d.MaxAttempts > maxBatch:
		return nil, fmt.Errorf("Go driver %s: MaxAttempts %d: want 0 to %d", name, d.MaxAttempts, maxBatch)
	case d.Lease < 0:
		return nil, fmt.Errorf("Go driver %s: negative Lease", name)
	}
	for _, s := range []string{Schema, Claim, Complete, Retry, Renew, Rescue, Enqueue, State, Expire, Due, Age} {
		if has(p, s) {
			proto.Sections[s] = &Section{Name: s, Line: 1}
		}
	}
	return proto, nil
}
