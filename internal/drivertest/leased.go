// Package drivertest holds Go drivers for the suite's own tests: the
// article's leased protocol written against the driver API, and drivers
// that break the API's promises on purpose. Importing it registers them
// (in init, so the worker processes, which re-execute the test binary,
// have them too).
package drivertest

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/driver"
)

// Names the drivers are registered under.
const (
	LeasedName = "drivertest-leased"
	// NoGenName completes without the generation check: a stale owner's
	// complete applies.
	NoGenName = "drivertest-complete-no-generation"
)

func init() {
	driver.Register(LeasedName, Leased{})
	driver.Register(NoGenName, Leased{CompleteIgnoresGeneration: true})
}

// Leased is sut's built-in leased protocol (sut/builtin/leased.sql) as Go.
type Leased struct {
	// CompleteIgnoresGeneration is the mutant: complete matches the row
	// and its live lease but not the claim's generation.
	CompleteIgnoresGeneration bool
}

func (Leased) Directives() driver.Directives { return driver.Directives{} }

func (Leased) Install(ctx context.Context, db driver.DB) error {
	_, err := db.Exec(ctx, `CREATE TABLE outbox_lab (
		id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		event_id text NOT NULL UNIQUE,
		status text NOT NULL DEFAULT 'READY',
		generation bigint NOT NULL DEFAULT 0,
		lease_until timestamptz,
		next_attempt_at timestamptz NOT NULL DEFAULT statement_timestamp())`)
	return err
}

func (Leased) Enqueue(ctx context.Context, db driver.DB, eventID string) error {
	_, err := db.Exec(ctx, `INSERT INTO outbox_lab (event_id) VALUES ($1)`, eventID)
	return err
}

func (Leased) Claim(ctx context.Context, db driver.DB, worker string) ([]*driver.Claimed, error) {
	var c driver.Claimed
	err := db.QueryRow(ctx, `WITH candidate AS (
			SELECT id FROM outbox_lab
			WHERE (status = 'READY' AND next_attempt_at <= statement_timestamp())
			   OR (status = 'INPROGRESS' AND lease_until <= statement_timestamp())
			ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
		UPDATE outbox_lab AS o
		SET status = 'INPROGRESS', generation = o.generation + 1,
		    lease_until = statement_timestamp() + interval '30 seconds'
		FROM candidate AS c WHERE o.id = c.id
		RETURNING o.id::text, o.event_id, o.generation`).Scan(&c.ID, &c.EventID, &c.Generation)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return []*driver.Claimed{&c}, nil
}

func (l Leased) Complete(ctx context.Context, db driver.DB, c driver.Claimed) (bool, error) {
	gen := `AND generation = $2`
	if l.CompleteIgnoresGeneration {
		gen = `AND $2::bigint IS NOT NULL`
	}
	tag, err := db.Exec(ctx, `UPDATE outbox_lab SET status = 'SENT', lease_until = NULL
		WHERE id = $1 AND status = 'INPROGRESS' `+gen+` AND lease_until > clock_timestamp()`, c.ID, c.Generation)
	return tag.RowsAffected() == 1, err
}

func (Leased) Retry(ctx context.Context, db driver.DB, c driver.Claimed) (bool, error) {
	tag, err := db.Exec(ctx, `UPDATE outbox_lab
		SET status = 'READY', lease_until = NULL, next_attempt_at = statement_timestamp() + interval '1 minute'
		WHERE id = $1 AND status = 'INPROGRESS' AND generation = $2 AND lease_until > clock_timestamp()`, c.ID, c.Generation)
	return tag.RowsAffected() == 1, err
}

func (Leased) State(ctx context.Context, db driver.DB) ([]driver.Row, error) {
	rows, _ := db.Query(ctx, `SELECT id::text, event_id, status, generation,
			CASE WHEN lease_until IS NULL THEN NULL ELSE lease_until <= statement_timestamp() END,
			next_attempt_at <= statement_timestamp()
		FROM outbox_lab ORDER BY id`)
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.Row, error) {
		var row driver.Row
		err := r.Scan(&row.ID, &row.EventID, &row.Status, &row.Generation, &row.LeaseExpired, &row.Due)
		return row, err
	})
}

func (Leased) Expire(ctx context.Context, db driver.DB, id string) error {
	_, err := db.Exec(ctx, `UPDATE outbox_lab SET lease_until = statement_timestamp() - interval '1 second'
		WHERE id = $1 AND status = 'INPROGRESS'`, id)
	return err
}

func (Leased) Due(ctx context.Context, db driver.DB, id string) error {
	_, err := db.Exec(ctx, `UPDATE outbox_lab SET next_attempt_at = statement_timestamp() - interval '1 second'
		WHERE id = $1`, id)
	return err
}

// Age moves the lease deadline back, so the suite can hold a claim to
// the 30 seconds it promises.
func (Leased) Age(ctx context.Context, db driver.DB, id string, seconds float64) error {
	_, err := db.Exec(ctx, `UPDATE outbox_lab SET lease_until = lease_until - make_interval(secs => $2)
		WHERE id = $1 AND status = 'INPROGRESS'`, id, seconds)
	return err
}
