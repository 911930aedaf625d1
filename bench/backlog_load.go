package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/sut"
)

// loadBatch is how many events one enqueue statement adds.
const loadBatch = 10_000

// backlogWorker is the @worker every statement of the backlog runs as.
const backlogWorker = "backlog"

// load enqueues n events through the protocol's own enqueue section, in
// bulk: the section becomes a SQL function of this connection's temporary
// schema (gone with the connection), called once per event by one
// statement per batch over generate_series, so the events arrive in
// enqueue order without a round trip each.
func load(ctx context.Context, inst *sut.Instance, n int) error {
	conn := inst.Conn
	st := inst.Statements.Stmts[sut.Enqueue]
	fn, err := enqueueFunction(ctx, conn, st)
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, fn); err != nil {
		return fmt.Errorf("enqueue as a function: %w", err)
	}
	var args []string
	for _, p := range st.Params {
		switch p {
		case "event_id":
			args = append(args, "'backlog-' || g")
		default: // worker: the only other parameter enqueue takes
			args = append(args, "'"+backlogWorker+"'")
		}
	}
	call := "SELECT pg_temp.backlog_enqueue(" + strings.Join(args, ", ") + ") FROM generate_series($1::int, $2::int) AS g"
	for from := 1; from <= n; from += loadBatch {
		to := min(from+loadBatch-1, n)
		bctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		_, err := conn.Exec(bctx, call, from, to)
		cancel()
		if err != nil {
			return fmt.Errorf("enqueue events %d to %d: %w", from, to, err)
		}
	}
	return nil
}

// enqueueFunction is the CREATE FUNCTION of the enqueue section, its
// parameters typed as the server types them in the section.
func enqueueFunction(ctx context.Context, conn *pgx.Conn, st sut.Stmt) (string, error) {
	desc, err := conn.Prepare(ctx, "", st.SQL)
	if err != nil {
		return "", fmt.Errorf("describe enqueue: %w", err)
	}
	var params []string
	for i, oid := range desc.ParamOIDs {
		var typ string
		if err := conn.QueryRow(ctx, "SELECT format_type($1::oid, NULL)", oid).Scan(&typ); err != nil {
			return "", fmt.Errorf("type of enqueue's $%d: %w", i+1, err)
		}
		params = append(params, typ)
	}
	body := strings.TrimRight(strings.TrimSpace(st.SQL), ";")
	return "CREATE FUNCTION pg_temp.backlog_enqueue(" + strings.Join(params, ", ") +
		") RETURNS void LANGUAGE sql AS $outboxlab_backlog$\n" + body + "\n$outboxlab_backlog$", nil
}

// schemaTables lists the tables of the protocol's schema.
func schemaTables(ctx context.Context, inst *sut.Instance) ([]string, error) {
	rows, _ := inst.Conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename`, inst.Statements.Schema)
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// vacuumAnalyze leaves the tables as a long-running system's are after
// autovacuum: the mix's updates cleaned up, the statistics fresh.
func vacuumAnalyze(ctx context.Context, inst *sut.Instance, tables []string) error {
	for _, t := range tables {
		if _, err := inst.Conn.Exec(ctx, "VACUUM (ANALYZE) "+pgx.Identifier{t}.Sanitize()); err != nil {
			return fmt.Errorf("vacuum %s: %w", t, err)
		}
	}
	return nil
}

// readMix counts the events through the protocol's own state query: what
// the protocol itself says each row is.
func readMix(ctx context.Context, inst *sut.Instance) (Mix, error) {
	st := inst.Statements.Stmts[sut.State]
	var args []any
	for range st.Params {
		args = append(args, backlogWorker)
	}
	rows, _ := inst.Conn.Query(ctx, `SELECT s.status, s.lease_expired, s.due, count(*)
		FROM (`+st.SQL+`) AS s GROUP BY 1, 2, 3`, args...)
	m := Mix{}
	for _, c := range classes {
		m[c] = 0
	}
	var status string
	var expired, due *bool
	var count int
	_, err := pgx.ForEachRow(rows, []any{&status, &expired, &due, &count}, func() error {
		switch {
		case status == "SENT" || status == "DEAD":
			m[classSent] += count
		case status == "READY" && due != nil && *due:
			m[classReady] += count
		case status == "READY":
			m[classWaiting] += count
		case status == "INPROGRESS" && expired != nil && *expired:
			m[classExpired] += count
		case status == "INPROGRESS":
			m[classLive] += count
		default:
			return fmt.Errorf("state query returned status %q", status)
		}
		return nil
	})
	return m, err
}

// verifyMix holds the backlog to what it was meant to be, as the protocol
// reads it.
func verifyMix(got, want Mix) error {
	for _, c := range classes {
		if got[c] != want[c] {
			return fmt.Errorf("the mix reads back wrong through the protocol's state query: %s %d, want %d (all: %v, want %v)",
				c, got[c], want[c], got, want)
		}
	}
	return nil
}
