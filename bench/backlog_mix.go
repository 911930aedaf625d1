package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The backlog's mix, by enqueue order: the oldest 90% of the events are
// SENT, as in an outbox that keeps its history; the newest 10% are the live
// part of the queue, interleaved by rank modulo 20: 11 in 20 READY and due,
// 4 waiting on a backoff, 3 claimed with a live lease, 2 claimed with a lease
// that expired (their worker died). So at 10^6 events, 900,000 SENT rows sit
// in front of the first eligible one: the shape of a production outbox.
const (
	classSent    = "sent"
	classReady   = "ready"
	classWaiting = "waiting"
	classLive    = "live"
	classExpired = "expired"
)

var classes = []string{classSent, classReady, classWaiting, classLive, classExpired}

// classOf is the class of the rn-th enqueued event (1-based) of n. The SQL
// of classTable says the same; expectedMix counts it.
func classOf(rn, n int) string {
	if rn <= n-n/10 {
		return classSent
	}
	switch k := rn % 20; {
	case k <= 10:
		return classReady
	case k <= 14:
		return classWaiting
	case k <= 17:
		return classLive
	}
	return classExpired
}

// Mix is how many events of each class a backlog holds.
type Mix map[string]int

func expectedMix(n int) Mix {
	m := Mix{}
	for _, c := range classes {
		m[c] = 0
	}
	m[classSent] = n - n/10
	for rn := n - n/10 + 1; rn <= n; rn++ {
		m[classOf(rn, n)]++
	}
	return m
}

// NotSent is the number of events a claim may have to look at: every one
// that is not SENT (or DEAD).
func (m Mix) NotSent() int { return m[classReady] + m[classWaiting] + m[classLive] + m[classExpired] }

// classTable ranks the main table's rows by their key (enqueue order) into
// a temporary table backlog_class(k, c), dropped at commit: the mixer's
// statements join on it.
func classTable(table, key string) string {
	return fmt.Sprintf(`CREATE TEMP TABLE backlog_class ON COMMIT DROP AS
SELECT k, CASE WHEN rn <= $1 - $1 / 10 THEN 'sent'
               WHEN rn %% 20 <= 10 THEN 'ready'
               WHEN rn %% 20 <= 14 THEN 'waiting'
               WHEN rn %% 20 <= 17 THEN 'live'
               ELSE 'expired' END AS c
FROM (SELECT %[2]s AS k, row_number() OVER (ORDER BY %[2]s) AS rn FROM %[1]s) AS ranked`, table, key)
}

// A mixer sets the mix on one protocol's table by direct updates of its own
// columns, in the protocol's own terms: which state and timestamps make an
// event SENT, waiting, or leased. The state query then reads the result back
// through the protocol's own mapping (verifyMix), so a mixer that got a
// protocol wrong is an error, not a silent figure.
type mixer struct {
	table string   // the table the claim walks, ranked by key
	key   string   // its enqueue-order column
	needs []string // tables the protocol's schema must have
	sql   []string // run after classTable, in one transaction
}

// mixers are the table shapes the backlog knows: the article's outbox_lab
// (leased and its variants) and three library shapes whose claims are
// planned differently (Oban's state index, River's table as the library
// file adapts it, without River's fetch index, and pgmq's queue table
// without its archive).
var mixers = []mixer{
	{table: "outbox_lab", key: "id", needs: []string{"outbox_lab"}, sql: []string{`
UPDATE outbox_lab AS o SET
    status = CASE b.c WHEN 'sent' THEN 'SENT' WHEN 'waiting' THEN 'READY' ELSE 'INPROGRESS' END,
    generation = 1,
    lease_until = CASE b.c WHEN 'live' THEN statement_timestamp() + interval '1 hour'
                           WHEN 'expired' THEN statement_timestamp() - interval '1 minute' END,
    next_attempt_at = CASE b.c WHEN 'waiting' THEN statement_timestamp() + interval '1 hour'
                               ELSE o.next_attempt_at END
FROM backlog_class AS b WHERE o.id = b.k AND b.c <> 'ready'`}},
	{table: "oban_jobs", key: "id", needs: []string{"oban_jobs"}, sql: []string{`
UPDATE oban_jobs AS o SET
    state = CASE b.c WHEN 'sent' THEN 'completed' WHEN 'waiting' THEN 'retryable'
                     ELSE 'executing' END::oban_job_state,
    attempt = 1,
    attempted_by = ARRAY['backlog'],
    attempted_at = CASE b.c WHEN 'expired' THEN timezone('UTC', now()) - interval '2 hours'
                            ELSE timezone('UTC', now()) END,
    completed_at = CASE b.c WHEN 'sent' THEN timezone('UTC', now()) END,
    scheduled_at = CASE b.c WHEN 'waiting' THEN timezone('UTC', now()) + interval '1 hour'
                            ELSE o.scheduled_at END
FROM backlog_class AS b WHERE o.id = b.k AND b.c <> 'ready'`}},
	{table: "river_job", key: "id", needs: []string{"river_job"}, sql: []string{`
UPDATE river_job AS j SET
    state = CASE b.c WHEN 'sent' THEN 'completed' WHEN 'waiting' THEN 'retryable'
                     ELSE 'running' END::river_job_state,
    attempt = 1,
    attempted_by = ARRAY['backlog'],
    attempted_at = CASE b.c WHEN 'expired' THEN now() - interval '2 hours' ELSE now() END,
    finalized_at = CASE b.c WHEN 'sent' THEN now() END,
    scheduled_at = CASE b.c WHEN 'waiting' THEN now() + interval '1 hour' ELSE j.scheduled_at END
FROM backlog_class AS b WHERE j.id = b.k AND b.c <> 'ready'`}},
	// pgmq archives a sent message: it leaves q_outbox for a_outbox.
	{table: "q_outbox", key: "msg_id", needs: []string{"q_outbox", "a_outbox", "outboxlab_backoff"}, sql: []string{`
INSERT INTO a_outbox (msg_id, vt, read_ct, enqueued_at, message, headers)
SELECT q.msg_id, q.vt, 1, q.enqueued_at, q.message, q.headers
FROM q_outbox AS q JOIN backlog_class AS b ON b.k = q.msg_id WHERE b.c = 'sent'`, `
DELETE FROM q_outbox AS q USING backlog_class AS b WHERE b.k = q.msg_id AND b.c = 'sent'`, `
UPDATE q_outbox AS q SET read_ct = 1,
    vt = CASE b.c WHEN 'expired' THEN clock_timestamp() - interval '1 minute'
                  ELSE clock_timestamp() + interval '1 hour' END
FROM backlog_class AS b WHERE b.k = q.msg_id AND b.c IN ('waiting', 'live', 'expired')`, `
INSERT INTO outboxlab_backoff (msg_id, read_ct) SELECT k, 1 FROM backlog_class WHERE c = 'waiting'`}},
}

// mixerFor picks the mixer for the tables a protocol's schema made.
func mixerFor(tables []string) (mixer, error) {
	for _, m := range mixers {
		if !slices.ContainsFunc(m.needs, func(t string) bool { return !slices.Contains(tables, t) }) {
			return m, nil
		}
	}
	var known []string
	for _, m := range mixers {
		known = append(known, m.table)
	}
	return mixer{}, fmt.Errorf("no backlog mix for its tables (%s): the backlog knows how to set SENT, waiting and leased rows on %s only",
		strings.Join(tables, ", "), strings.Join(known, ", "))
}

// apply sets the mix on a table of n enqueued events, in one transaction.
func (m mixer) apply(ctx context.Context, conn *pgx.Conn, n int) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, classTable(m.table, m.key), n); err != nil {
		return fmt.Errorf("rank %s: %w", m.table, err)
	}
	for _, sql := range m.sql {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return fmt.Errorf("set the mix on %s: %w", m.table, err)
		}
	}
	return tx.Commit(ctx)
}
