package sut

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/outboxlab/outboxlab/workerproto"
)

// WorkerSpec is how to start a protocol's worker executable and what it
// said at install: plain data, as Statements are.
type WorkerSpec struct {
	Command  string
	Features []string
	// Fence is the worker's: counter, token or none.
	Fence      string
	Directives workerproto.Directives
}

// Has reports whether the worker serves the optional request feature.
func (w *WorkerSpec) Has(feature string) bool {
	return workerproto.Hello{Features: w.Features}.Has(feature)
}

// installTimeout bounds a worker's install (a library's migrations).
const installTimeout = 2 * time.Minute

// installSeq numbers the install processes' application_names.
var installSeq atomic.Uint64

// WorkerDSN is connString with the application_name a worker's
// connection must carry, so that a worker that passes the DSN through
// names its connection as the contract asks.
func WorkerDSN(connString, app string) string {
	if u, err := url.Parse(connString); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set("application_name", app)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return connString + " application_name='" + strings.ReplaceAll(app, "'", `\'`) + "'"
}

// Directives are the file's directives as init carries them.
func (p *Protocol) Directives() workerproto.Directives {
	d := workerproto.Directives{Order: string(p.Order), Batch: p.Batch, Policy: "strict", MaxAttempts: p.MaxAttempts,
		Done: "keep", Lease: p.Lease.String(), Fence: p.Fence.String()}
	if p.Lenient {
		d.Policy = "lenient"
	}
	if p.DeleteDone {
		d.Done = "delete"
	}
	if p.SessionLease {
		d.Lease = "session"
	}
	return d
}

// installWorker is install for a worker's file: the worker says at init
// what it serves and how its rows are fenced, and creates its tables
// itself (feature install) or the file's schema section does.
func (inst *Instance) installWorker(ctx context.Context) error {
	p, schema := inst.Proto, inst.Statements.Schema
	c, err := workerproto.Start(p.Worker, "install", nil)
	if err != nil {
		return err
	}
	defer c.Kill(true)
	app := fmt.Sprintf("outboxlab install #%d", installSeq.Add(1))
	hello, err := c.Init(workerproto.Config{DSN: WorkerDSN(inst.ConnString, app), Schema: schema,
		OpTimeout: installTimeout, WaitTimeout: installTimeout, ApplicationName: app, Directives: p.Directives()})
	if err != nil {
		return err
	}
	switch {
	case hello.Has(workerproto.FeatureInstall):
		r, err := c.Call(workerproto.Request{Type: workerproto.Install}, installTimeout)
		if err != nil {
			return fmt.Errorf("install through the worker: %w", err)
		}
		if r.Type == "error" {
			return fmt.Errorf("install through the worker %q failed: %s: %s (sqlstate %q)\n%s", p.Worker, r.Code, r.Text, r.SQLState, c.StderrTail())
		}
	case p.Sections[Schema] != nil:
		ddl := p.Sections[Schema]
		if err := inst.Conn.PgConn().Exec(ctx, ddl.SQL).Close(); err != nil {
			return p.serverError(ddl, err)
		}
	default:
		return &Error{File: p.File, Line: 1, Msg: fmt.Sprintf("the worker %q serves no install (its init_ok's features: %v) and the file has no schema section: one of them must create the tables", p.Worker, hello.Features)}
	}
	p.Served = map[string]bool{Claim: true, Complete: true, Retry: true,
		Renew: hello.Has(workerproto.FeatureRenew), Rescue: hello.Has(workerproto.FeatureRescue)}
	p.Fence = FenceCounter
	if hello.Fence == "token" {
		p.Fence = FenceToken
	}
	st := inst.Statements
	st.HasGen = hello.Fence != "none"
	st.Token = hello.Fence == "token"
	st.Worker = &WorkerSpec{Command: p.Worker, Features: hello.Features, Fence: hello.Fence, Directives: p.Directives()}
	if err := inst.describeHarness(ctx, st.HasGen); err != nil {
		return err
	}
	if s := p.Sections[Reset]; s != nil {
		inst.reset = resetPlan{clear: strings.TrimRight(strings.TrimSpace(s.SQL), ";"), enqueue: p.Sections[Enqueue].SQL, cache: map[string]string{}}
		return nil
	}
	plan, err := planReset(ctx, inst.Conn, schema, p.Sections[Enqueue].SQL)
	if err != nil {
		return fmt.Errorf("plan reset: %w", err)
	}
	inst.reset = plan
	return nil
}

// describeHarness is describeAll for the sections the harness runs.
func (inst *Instance) describeHarness(ctx context.Context, hasGen bool) error {
	p := inst.Proto
	if p.Sections[State] == nil {
		sql := defaultStateWithoutGeneration
		if hasGen {
			sql = defaultStateWithGeneration
		}
		p.Sections[State] = &Section{Name: State, SQL: sql, Line: 1, Default: true}
	}
	for _, name := range []string{Enqueue, State, Expire, Due, Age} {
		s := p.Sections[name]
		if s == nil {
			continue
		}
		if name == Age && s.Default {
			if err := inst.describeOptionalDefault(ctx, s); err != nil {
				return err
			}
			continue
		}
		desc, err := inst.describe(ctx, s)
		if err != nil {
			return err
		}
		if name == State {
			if err := p.checkStateColumns(s, desc, hasGen); err != nil {
				return err
			}
		}
	}
	return nil
}
