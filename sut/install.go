package sut

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Instance is a protocol installed in a schema of its own, with the harness's
// checking connection. Close drops the schema.
type Instance struct {
	Proto      *Protocol
	Statements *Statements
	ConnString string // the server's; workers add the schema themselves
	Conn       *pgx.Conn
	reset      resetPlan
	// rowProbe is the SELECT ... FOR UPDATE of an event's row that
	// ProbeRow runs, from the expire fixture; "" when it cannot be made.
	rowProbe string
	// driver runs a Go driver's operations (InstallDriver); nil for a
	// protocol file, whose Statements run them.
	driver Driver
}

// NewSchemaName returns a unique schema name for one run.
func NewSchemaName() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "outboxlab_" + hex.EncodeToString(b)
}

// Connect opens a connection whose search_path is the schema.
func Connect(ctx context.Context, connString, schema string) (*pgx.Conn, error) {
	cfg, err := ConnConfig(connString, schema)
	if err != nil {
		return nil, err
	}
	return ConnectWith(ctx, cfg)
}

// ConnConfig is Connect's configuration, for a caller that changes it
// (its dialer) before ConnectWith.
func ConnConfig(connString, schema string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["search_path"] = schema
	cfg.RuntimeParams["application_name"] = "outboxlab"
	return cfg, nil
}

// ConnectWith connects with cfg, within Connect's time limit.
func ConnectWith(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return pgx.ConnectConfig(ctx, cfg)
}

// Install creates a fresh schema, runs the protocol's DDL in it and checks
// every statement with the server (syntax, parameters, result columns)
// before anything runs. Protocol errors come back as *Error (FILE:LINE).
func Install(ctx context.Context, connString string, p *Protocol) (*Instance, error) {
	schema := NewSchemaName()
	conn, err := Connect(ctx, connString, schema)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	inst := &Instance{Proto: p, ConnString: connString, Conn: conn,
		Statements: &Statements{Schema: schema, Batch: p.Batch, Stmts: map[string]Stmt{}}}
	if err := inst.install(ctx); err != nil {
		inst.Close()
		return nil, err
	}
	inst.rowProbe = forUpdateProbe(inst.Statements.Stmts[Expire])
	return inst, nil
}

func (inst *Instance) install(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	p, schema := inst.Proto, inst.Statements.Schema
	sweepAbandonedSchemas(ctx, inst.Conn)
	if _, err := inst.Conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return fmt.Errorf("create schema %s: %w", schema, err)
	}
	if _, err := inst.Conn.Exec(ctx, "COMMENT ON SCHEMA "+schema+" IS "+quoteLiteral(schemaOwner())); err != nil {
		return fmt.Errorf("label schema %s: %w", schema, err)
	}
	if p.Worker != "" {
		return inst.installWorker(ctx)
	}
	ddl := p.Sections[Schema]
	if err := inst.Conn.PgConn().Exec(ctx, ddl.SQL).Close(); err != nil {
		return p.serverError(ddl, err)
	}
	if err := inst.describeAll(ctx); err != nil {
		return err
	}
	plan, err := planReset(ctx, inst.Conn, schema, p.Sections[Enqueue].SQL)
	if err != nil {
		return fmt.Errorf("plan reset: %w", err)
	}
	inst.reset = plan
	return nil
}

// describeAll prepares every section but schema, checks the result columns
// of claim and state, and keeps the positional form of each statement.
func (inst *Instance) describeAll(ctx context.Context) error {
	p := inst.Proto
	claim, err := inst.describe(ctx, p.Sections[Claim])
	if err != nil {
		return err
	}
	hasGen, err := p.checkClaimColumns(claim)
	if err != nil {
		return err
	}
	inst.Statements.HasGen = hasGen
	inst.Statements.Token = p.Fence == FenceToken
	if p.Sections[State] == nil {
		sql := defaultStateWithoutGeneration
		if hasGen {
			sql = defaultStateWithGeneration
		}
		p.Sections[State] = &Section{Name: State, SQL: sql, Line: 1, Default: true}
	}
	for _, name := range []string{Complete, Retry, Renew, Rescue, Enqueue, State, Expire, Due, Age} {
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
		switch name {
		case State:
			err = p.checkStateColumns(s, desc, hasGen)
		case Complete, Retry, Renew:
			err = p.checkOutcomeColumns(s, desc)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// describeOptionalDefault keeps a default statement the protocol may do
// without (age) only when the server accepts it. Any server error drops it:
// the default names the article's table, and a protocol on another table
// simply has no such fixture. Other errors (a lost connection) are not the
// protocol's and are returned.
func (inst *Instance) describeOptionalDefault(ctx context.Context, s *Section) error {
	_, err := inst.describe(ctx, s)
	if err == nil {
		return nil
	}
	if !errors.As(err, new(*Error)) {
		return err
	}
	delete(inst.Proto.Sections, s.Name)
	delete(inst.Statements.Stmts, s.Name)
	return nil
}

func (inst *Instance) describe(ctx context.Context, s *Section) (*pgconn.StatementDescription, error) {
	if pieces := statementPieces(s.SQL); len(pieces) > 1 && contains(multiSections, s.Name) {
		return inst.describeSteps(ctx, s, pieces)
	}
	sql, params := positional(s.SQL)
	desc, err := inst.Conn.PgConn().Prepare(ctx, "", sql, nil)
	if err != nil {
		return nil, inst.Proto.serverError(s, err)
	}
	inst.Statements.Stmts[s.Name] = Stmt{SQL: sql, Params: params}
	return desc, nil
}

// describeSteps describes a section of several statements as they will run:
// in one transaction, each after the ones before it have run, so that a
// later one sees what an earlier one made (a temp table, locked rows). The
// parameters run as NULL and the transaction is rolled back, so nothing of
// it stays. It returns the last statement's description: only its result
// is the section's.
func (inst *Instance) describeSteps(ctx context.Context, s *Section, pieces []piece) (*pgconn.StatementDescription, error) {
	tx, err := inst.Conn.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: section %q: begin: %w", inst.Proto.File, s.Name, err)
	}
	defer tx.Rollback(ctx)
	pg := inst.Conn.PgConn()
	var stmts []Stmt
	var desc *pgconn.StatementDescription
	for i, pc := range pieces {
		sql, params := positional(s.SQL[pc.start:pc.end])
		if desc, err = pg.Prepare(ctx, "", sql, nil); err != nil {
			return nil, inst.Proto.serverErrorAt(s, pc, err)
		}
		stmts = append(stmts, Stmt{SQL: sql, Params: params})
		if i == len(pieces)-1 {
			break
		}
		nulls := make([][]byte, len(desc.ParamOIDs))
		if _, err := pg.ExecPrepared(ctx, "", nulls, nil, nil).Close(); err != nil {
			return nil, inst.Proto.serverErrorAt(s, pc, err)
		}
	}
	last := stmts[len(stmts)-1]
	last.Prelude = stmts[:len(stmts)-1]
	inst.Statements.Stmts[s.Name] = last
	return desc, nil
}

// serverError turns a server's complaint about a section into FILE:LINE,
// using the error's character position when it has one. The position counts
// in the statement as sent: positional's rewrite of the section (schema,
// which takes no parameters, is sent as written, which maps the same way).
func (p *Protocol) serverError(s *Section, err error) error {
	return p.serverErrorAt(s, piece{0, len(s.SQL)}, err)
}

// serverErrorAt is serverError for the statement pc of a section that holds
// several, each sent on its own: a position counts in that statement.
func (p *Protocol) serverErrorAt(s *Section, pc piece, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return fmt.Errorf("%s: section %q: %w", p.File, s.Name, err)
	}
	line := s.Line
	if !s.Default {
		text := s.SQL[pc.start:pc.end]
		at := pc.start + len(text) - len(strings.TrimLeft(text, " \t\r\n"))
		if pc.start > 0 {
			// A later statement starts after the last one's ';', often
			// with a comment between: its own first line is meant.
			at = pc.start + max(codeStart(text), 0)
		}
		if pos := int(pgErr.Position); pos > 0 {
			at = pc.start + errorOffset(text, pos)
		}
		line = s.Line + 1 + strings.Count(s.SQL[:at], "\n")
		if line > s.Line+strings.Count(s.SQL, "\n")+1 {
			line = s.Line
		}
	}
	what := "section " + s.Name
	if s.Default {
		what = "default " + s.Name + " statement (the protocol has no " + s.Name + " section; supply one for a table other than outbox_lab)"
	}
	return &Error{File: p.File, Line: line, Msg: fmt.Sprintf("%s: %s (SQLSTATE %s)", what, pgErr.Message, pgErr.Code)}
}

// Close drops the run's schema and closes the checking connection.
func (inst *Instance) Close() {
	if inst.Conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A statement cut short by its deadline closes the connection: drop
	// the schema over a fresh one then.
	inst.EnsureConn(ctx)
	inst.Conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+inst.Statements.Schema+" CASCADE")
	inst.Conn.Close(ctx)
	inst.Conn = nil
}

// EnsureConn replaces the checking connection when it no longer works (a
// server restart breaks it, or a statement cut short by its deadline).
func (inst *Instance) EnsureConn(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	err := inst.Conn.Ping(pctx)
	cancel()
	if err == nil {
		return nil
	}
	conn, err := Connect(ctx, inst.ConnString, inst.Statements.Schema)
	if err != nil {
		return fmt.Errorf("reconnect the checking connection: %w", err)
	}
	old := inst.Conn
	inst.Conn = conn
	closeCtx, cancel := context.WithTimeout(ctx, 0)
	defer cancel()
	old.Close(closeCtx)
	return nil
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
