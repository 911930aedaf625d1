package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// wireTx is one connection that runs one transaction of prepared
// statements over and over, speaking the extended query protocol itself
// once pgx has connected and prepared them. Each statement is its own
// round trip of Bind, Describe (portal), Execute and Sync, parameters and
// results in text: the messages libpq sends for pgbench -M prepared, so
// that both clients ask the server for the same work.
//
// Why not pgx.Conn, which the bench used before: its claim cost 1.35 to
// 2.1 times pgbench's at 10^3 events (BenchmarkClaimAlternating, the same
// rounds for both). Part of that was shape: pgx sends an Exec without
// arguments (BEGIN, ROLLBACK) by the simple protocol whatever the mode
// asked, so the two clients did not send the same messages. The rest is
// the client's own work per round trip: pgconn resets its 15 ms
// slow-write timer at every flush and watches the call's context, and
// every read and write is a system call that wakes the Go runtime's
// monitor thread (see rawConn). This loop arms no timer per call: the
// socket's deadline, moved on at most every sixth of the timeout, bounds
// every call to its timeout (callTimeout).
type wireTx struct {
	conn     net.Conn
	fe       *pgproto3.Frontend
	stmts    []wireStmt
	counted  int // the statement whose rows run returns
	ctx      context.Context
	stop     func() bool
	timeout  time.Duration // the most any one call may take
	deadline time.Time
}

type wireStmt struct {
	name   string
	params [][]byte
}

// callTimeout bounds every call; the socket's deadline is moved on when
// less than five sixths of it is left, so each call has between that and
// the whole of it.
const callTimeout = time.Minute

// openWireTx prepares sqls on c, each with its parameters all bound to the
// text arg (the claims' @worker), and takes the connection over from pgx:
// c is unusable afterwards and the wireTx's close closes it. A
// cancellation of ctx interrupts a call in progress.
func openWireTx(ctx context.Context, c *pgx.Conn, sqls []string, nparams []int, arg string, counted int) (*wireTx, error) {
	pc := c.PgConn()
	w := &wireTx{counted: counted, ctx: ctx, timeout: callTimeout}
	pctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	for i, sql := range sqls {
		name := fmt.Sprintf("outboxlab_wire_%d", i)
		if _, err := pc.Prepare(pctx, name, sql, nil); err != nil {
			pc.Close(pctx)
			return nil, fmt.Errorf("prepare %q: %w", sql, err)
		}
		st := wireStmt{name: name}
		for range nparams[i] {
			st.params = append(st.params, []byte(arg))
		}
		w.stmts = append(w.stmts, st)
	}
	if err := pc.SyncConn(pctx); err != nil {
		pc.Close(pctx)
		return nil, err
	}
	hj, err := pc.Hijack()
	if err != nil {
		pc.Close(pctx)
		return nil, err
	}
	w.conn = hj.Conn
	w.fe = pgproto3.NewFrontend(w.conn, w.conn)
	w.stop = context.AfterFunc(ctx, func() { w.conn.SetDeadline(time.Unix(1, 0)) })
	return w, nil
}

// run sends every statement in order, each its own round trip, and
// returns the rows of the counted one. After a statement the server
// refused, it skips to the last statement (the ROLLBACK that ends the
// transaction) and returns the first error. An error of the connection
// itself leaves it unusable.
func (w *wireTx) run() (rows int, err error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	if time.Until(w.deadline) < w.timeout*5/6 {
		w.deadline = time.Now().Add(w.timeout)
		if err := w.conn.SetDeadline(w.deadline); err != nil {
			return 0, err
		}
		// A cancellation whose AfterFunc ran before this SetDeadline
		// would be undone by it.
		if err := w.ctx.Err(); err != nil {
			return 0, err
		}
	}
	var first error
	for i, st := range w.stmts {
		if first != nil && i < len(w.stmts)-1 {
			continue
		}
		n, serr, err := w.exec(st)
		if err != nil {
			return 0, err
		}
		if serr != nil && first == nil {
			first = fmt.Errorf("%s: %w", st.name, serr)
		}
		if i == w.counted {
			rows = n
		}
	}
	return rows, first
}

// exec is one round trip. serr is the server's refusal, err the
// connection's failure.
func (w *wireTx) exec(st wireStmt) (rows int, serr, err error) {
	w.fe.SendBind(&pgproto3.Bind{PreparedStatement: st.name, Parameters: st.params})
	w.fe.SendDescribe(&pgproto3.Describe{ObjectType: 'P'})
	w.fe.SendExecute(&pgproto3.Execute{})
	w.fe.SendSync(&pgproto3.Sync{})
	if err := w.fe.Flush(); err != nil {
		return 0, nil, w.connErr(err)
	}
	for {
		msg, err := w.fe.Receive()
		if err != nil {
			return 0, nil, w.connErr(err)
		}
		switch m := msg.(type) {
		case *pgproto3.DataRow:
			rows++
		case *pgproto3.ErrorResponse:
			serr = pgconn.ErrorResponseToPgError(m)
		case *pgproto3.ReadyForQuery:
			return rows, serr, nil
		}
	}
}

// connErr names a cancellation or a deadline for what it was.
func (w *wireTx) connErr(err error) error {
	if cerr := w.ctx.Err(); cerr != nil {
		return cerr
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("no reply within %v: %w", w.timeout, err)
	}
	return err
}

// close ends the session politely; a connection that failed is just closed.
func (w *wireTx) close() {
	w.stop()
	w.conn.SetDeadline(time.Now().Add(time.Second))
	w.fe.Send(&pgproto3.Terminate{})
	w.fe.Flush()
	w.conn.Close()
}
