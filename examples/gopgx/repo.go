package gopgx

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Querier is what the repository runs on: a *pgx.Conn, a pgx.Tx or a
// *pgxpool.Pool in the relay; the one connection outboxlab gives under
// test.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Message is a claimed outbox row.
type Message struct {
	ID         int64
	EventID    string
	Generation int64
}

// Repo is the relay's outbox repository.
type Repo struct {
	// SkipGenerationCheck is the bug the test plants: MarkSent trusts
	// the id and the live lease, not the generation, so a worker whose
	// lease ended and was reclaimed can still mark the row sent.
	SkipGenerationCheck bool
}

// Migrate creates the outbox table.
func (Repo) Migrate(ctx context.Context, q Querier) error {
	_, err := q.Exec(ctx, `CREATE TABLE outbox (
		id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		event_id text NOT NULL UNIQUE,
		status text NOT NULL DEFAULT 'READY',
		generation bigint NOT NULL DEFAULT 0,
		lease_until timestamptz,
		next_attempt_at timestamptz NOT NULL DEFAULT statement_timestamp())`)
	return err
}

// Publish adds an event, due now.
func (Repo) Publish(ctx context.Context, q Querier, eventID string) error {
	_, err := q.Exec(ctx, `INSERT INTO outbox (event_id) VALUES ($1)`, eventID)
	return err
}

// ErrEmpty is ClaimNext's answer when nothing is claimable.
var ErrEmpty = errors.New("outbox: nothing to claim")

// ClaimNext leases the oldest claimable message: due and READY, or
// INPROGRESS with its lease ended. SKIP LOCKED leaves rows another worker
// is claiming to that worker.
func (Repo) ClaimNext(ctx context.Context, q Querier) (Message, error) {
	var m Message
	err := q.QueryRow(ctx, `WITH candidate AS (
			SELECT id FROM outbox
			WHERE (status = 'READY' AND next_attempt_at <= statement_timestamp())
			   OR (status = 'INPROGRESS' AND lease_until <= statement_timestamp())
			ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
		UPDATE outbox AS o
		SET status = 'INPROGRESS', generation = o.generation + 1,
		    lease_until = statement_timestamp() + interval '30 seconds'
		FROM candidate AS c WHERE o.id = c.id
		RETURNING o.id, o.event_id, o.generation`).Scan(&m.ID, &m.EventID, &m.Generation)
	if errors.Is(err, pgx.ErrNoRows) {
		return Message{}, ErrEmpty
	}
	return m, err
}

// MarkSent records a publish; false when the caller no longer owns the
// row (another claim took it, or its lease ended).
func (r Repo) MarkSent(ctx context.Context, q Querier, m Message) (bool, error) {
	fence := ` AND generation = $2`
	if r.SkipGenerationCheck {
		fence = ` AND $2::bigint IS NOT NULL`
	}
	tag, err := q.Exec(ctx, `UPDATE outbox SET status = 'SENT', lease_until = NULL
		WHERE id = $1 AND status = 'INPROGRESS' AND lease_until > clock_timestamp()`+fence, m.ID, m.Generation)
	return tag.RowsAffected() == 1, err
}

// Reschedule gives the row back for a later attempt, a minute from now;
// false as MarkSent's.
func (Repo) Reschedule(ctx context.Context, q Querier, m Message) (bool, error) {
	tag, err := q.Exec(ctx, `UPDATE outbox
		SET status = 'READY', lease_until = NULL, next_attempt_at = statement_timestamp() + interval '1 minute'
		WHERE id = $1 AND status = 'INPROGRESS' AND generation = $2 AND lease_until > clock_timestamp()`,
		m.ID, m.Generation)
	return tag.RowsAffected() == 1, err
}
