package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/outboxlab/outboxlab/sut"
)

// MainIfWorker turns this process into a worker when it was started as one,
// and never returns in that case. Call it first in TestMain and main.
func MainIfWorker() {
	if os.Getenv(envVar) == "" {
		return
	}
	// One statement at a time needs one P. With more, every timer a
	// statement arms (its context's deadline, pgx's write watchdog) wakes a
	// second thread to watch the poller, and an idle worker pays that
	// wake-up on each operation: about 6 us of its CPU per operation, a
	// seventh, in `outboxlab bench --only concurrent` on 2 cores.
	runtime.GOMAXPROCS(1)
	if err := serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(3)
	}
	os.Exit(0)
}

// agent is the worker side: one connection, at most one open transaction.
type agent struct {
	spec Spec
	// drv runs the protocol's operations: the spec's statements, or the
	// Go driver registered under the name the spec carries, which this
	// process registered itself in its init or TestMain.
	drv  sut.Driver
	conn *pgx.Conn
	tx   pgx.Tx
	// in and out are the pipes, which a drive also asks the parent on;
	// id is the request the next reply answers, line the reply's buffer.
	in    *bufio.Reader
	out   *bufio.Writer
	id    int64
	line  []byte
	board *Board // opened by the first drive
}

// connect connects, if the worker has no connection, within a bound that
// outlasts the parent's wait for an answer (a connection through a proxy
// that loses its traffic would wait forever).
func (a *agent) connect() Response { return a.connectWithin(a.spec.OpTimeout + 5*time.Second) }

func (a *agent) connectWithin(limit time.Duration) Response {
	if a.conn != nil && !a.conn.IsClosed() {
		return Response{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cfg, err := sut.ConnConfig(a.spec.ConnString, a.spec.Statements.Schema)
	if err != nil {
		return failure(err, false)
	}
	if a.spec.App != "" {
		cfg.RuntimeParams["application_name"] = a.spec.App
	}
	if a.spec.Pooled {
		noCancelRequests(cfg)
	}
	conn, err := sut.ConnectWith(ctx, cfg)
	if err != nil {
		return failure(err, false)
	}
	if err := prepare(conn, a.spec); err != nil {
		conn.Close(context.Background())
		return failure(err, false)
	}
	a.conn = conn
	return Response{}
}

// prepare readies the worker's statements as soon as it connects, so that
// each later runs in one round trip: a reply lost to a network fault is
// then the reply of a statement that ran, not of its preparation. A section
// of several statements is left to pgx's cache: its later statements may
// name what the earlier ones make (a temp table), which does not exist yet.
//
// Through a pooler nothing is prepared: a named statement lives on one
// server connection, and a transaction pooler runs the next transaction on
// another (PgBouncer before 1.21 keeps none across transactions). pgx would
// run a statement prepared here by name, whatever the connection string's
// query mode.
//
// A Go driver's statements are its own code's, unknown here: none is
// prepared, and pgx's cache prepares each on its first run.
func prepare(conn *pgx.Conn, spec Spec) error {
	if spec.Pooled || spec.Statements.GoDriver != "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), spec.OpTimeout)
	defer cancel()
	for _, name := range []string{sut.Claim, sut.Complete, sut.Retry, sut.Renew, sut.Rescue} {
		st, ok := spec.Statements.Stmts[name]
		if !ok || len(st.Prelude) > 0 {
			continue
		}
		// Named by its text, pgx runs the prepared statement for Query(sql).
		if _, err := conn.Prepare(ctx, st.SQL, st.SQL); err != nil {
			return fmt.Errorf("prepare %s: %w", name, err)
		}
	}
	return nil
}

func (a *agent) handle(req Request) Response {
	switch req.Op {
	case "reconnect":
		a.drop()
		return a.connect()
	case OpDrive:
		return a.drive(req)
	case "reset":
		// A new check: no transaction left open, a working connection.
		if a.tx != nil {
			ctx, cancel := context.WithTimeout(context.Background(), a.spec.OpTimeout)
			err := a.tx.Rollback(ctx)
			cancel()
			a.tx = nil
			if err != nil {
				a.drop()
			}
		}
		return a.connect()
	}
	if a.conn == nil || a.conn.IsClosed() {
		a.tx = nil
		if resp := a.connect(); resp.Err != "" {
			return resp
		}
	}
	limit := a.spec.OpTimeout
	if req.MayWait {
		limit = WaitTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	resp := a.run(ctx, req)
	if resp.Err != "" && !resp.ServerErr && !resp.Protocol {
		// The connection is in an unknown state: start afresh next time,
		// as a production worker's pool would. After a server error or a
		// result the format forbids it is fine, and an open transaction
		// stays open for the parent to see.
		a.drop()
	}
	return resp
}

func (a *agent) run(ctx context.Context, req Request) Response {
	st := a.drv
	var q sut.Querier = a.conn
	if a.tx != nil {
		q = a.tx
	}
	switch req.Op {
	case opOpen:
		return a.open(ctx, req)
	case "claim", "begin":
		if req.Op == "begin" {
			// The machine's begin, as a drive runs it: a claim in a new
			// transaction.
			if resp := a.open(ctx, req); resp.Err != "" {
				return resp
			}
			q = a.tx
		}
		rows, err := st.ClaimRows(ctx, q, a.spec.Name)
		if err != nil {
			return failure(err, ctx.Err() != nil)
		}
		return claimed(rows)
	case "commit", "rollback":
		if a.tx == nil {
			return Response{Err: req.Op + ": no open transaction"}
		}
		tx := a.tx
		a.tx = nil
		var err error
		if req.Op == "commit" {
			err = tx.Commit(ctx)
		} else {
			err = tx.Rollback(ctx)
		}
		if err != nil {
			return failure(err, ctx.Err() != nil)
		}
		return Response{}
	case sut.Complete, sut.Retry, sut.Renew:
		ok, err := st.Apply(ctx, q, req.Op, sut.Args{ID: req.ID, Gen: req.Gen, Token: req.Token, Worker: a.spec.Name})
		if err != nil {
			return failure(err, ctx.Err() != nil)
		}
		return Response{Applied: ok}
	case OpSplit:
		return a.splitFirst(ctx, req)
	case OpFinish:
		return a.splitRest(ctx, req)
	case sut.Rescue:
		if err := st.Rescue(ctx, q, a.spec.Name); err != nil {
			return failure(err, ctx.Err() != nil)
		}
		return Response{}
	}
	if resp, ok := a.relayOp(ctx, req); ok {
		return resp
	}
	return Response{Err: fmt.Sprintf("unknown op %q", req.Op)}
}

// opOpen is the contract's begin: a new transaction, and in it the
// expire fixture of the row req.ID names, or the fixture the request
// carries.
const opOpen = "open"

func (a *agent) open(ctx context.Context, req Request) Response {
	if a.tx != nil {
		return Response{Err: "begin: a transaction is already open"}
	}
	tx, err := a.conn.Begin(ctx)
	if err != nil {
		return failure(err, ctx.Err() != nil)
	}
	a.tx = tx
	switch {
	case req.ID != "":
		// Begin(expire e): the expire fixture first, in this transaction
		// (model/expiring.go says why).
		err = a.drv.Exec(ctx, tx, sut.Expire, sut.Args{ID: req.ID, Worker: "harness"})
	case req.fixture != nil:
		args := make([]any, len(req.fixture.Args))
		for i, v := range req.fixture.Args {
			args[i] = v
		}
		_, err = tx.Exec(ctx, req.fixture.SQL, args...)
	}
	if err != nil {
		return failure(err, ctx.Err() != nil)
	}
	return Response{}
}

// claimed is a claim's response: every row, and the first one also in
// Found, ID, Event, Gen and Token, which a one-row protocol's reader looks
// at.
func claimed(rows []sut.ClaimResult) Response {
	if len(rows) == 0 {
		return Response{}
	}
	first := rows[0]
	resp := Response{Found: true, ID: first.ID, Event: first.Event, Gen: first.Gen, Token: first.Token,
		Rows: make([]ClaimRow, len(rows))}
	for i, r := range rows {
		resp.Rows[i] = ClaimRow{ID: r.ID, Event: r.Event, Gen: r.Gen, Token: r.Token}
	}
	return resp
}

// backendPID is the server pid of the worker's connection (0: none).
func (a *agent) backendPID() uint32 {
	if a.conn == nil || a.conn.IsClosed() {
		return 0
	}
	return a.conn.PgConn().PID()
}

func (a *agent) drop() {
	a.tx = nil
	if a.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 0)
		a.conn.Close(ctx) // do not wait on a dead peer
		cancel()
		a.conn = nil
	}
}

// failure sorts an error into the three things it can mean: the server
// ran the statement and refused it (ServerErr), the statement returned what
// its section may not (Protocol), or the connection failed or timed out, so
// that nobody knows whether the statement ran.
func failure(err error, timedOut bool) Response {
	timedOut = timedOut || errors.Is(err, context.DeadlineExceeded)
	resp := Response{
		Err:       err.Error(),
		ServerErr: sut.IsServerError(err) && !sessionEnded(err),
		Protocol:  sut.IsProtocolError(err),
		Rule:      sut.RuleOf(err),
		Timeout:   timedOut,
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		resp.sqlstate = pgErr.Code
	}
	return resp
}

// sessionEnded reports a server error that ends the connection rather than
// the statement (the server shutting down or restarting, the backend
// terminated, still in recovery): like a lost connection, it leaves the
// outcome of the statement unknown.
func sessionEnded(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	return pgErr.Severity == "FATAL" || pgErr.Severity == "PANIC" ||
		strings.HasPrefix(pgErr.Code, "57P") || strings.HasPrefix(pgErr.Code, "08")
}
