package gopgx

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/driver"
)

// Protocol adapts Repo to outboxlab's driver.Protocol: each operation is
// one call of the repository, and the fixtures (State, Expire, Due, Age)
// are what outboxlab needs to see and move the rows, which a relay has no
// method for.
type Protocol struct{ Repo Repo }

var _ interface {
	driver.Protocol
	driver.Ager
} = Protocol{}

// Directives: FIFO, one row per claim, a 30 s lease, a counter generation:
// the defaults.
func (Protocol) Directives() driver.Directives { return driver.Directives{} }

func (p Protocol) Install(ctx context.Context, db driver.DB) error { return p.Repo.Migrate(ctx, db) }

func (p Protocol) Enqueue(ctx context.Context, db driver.DB, eventID string) error {
	return p.Repo.Publish(ctx, db, eventID)
}

func (p Protocol) Claim(ctx context.Context, db driver.DB, worker string) ([]*driver.Claimed, error) {
	m, err := p.Repo.ClaimNext(ctx, db)
	if errors.Is(err, ErrEmpty) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return []*driver.Claimed{{ID: strconv.FormatInt(m.ID, 10), EventID: m.EventID, Generation: m.Generation}}, nil
}

func (p Protocol) Complete(ctx context.Context, db driver.DB, c driver.Claimed) (bool, error) {
	m, err := message(c)
	if err != nil {
		return false, err
	}
	return p.Repo.MarkSent(ctx, db, m)
}

func (p Protocol) Retry(ctx context.Context, db driver.DB, c driver.Claimed) (bool, error) {
	m, err := message(c)
	if err != nil {
		return false, err
	}
	return p.Repo.Reschedule(ctx, db, m)
}

func message(c driver.Claimed) (Message, error) {
	id, err := strconv.ParseInt(c.ID, 10, 64)
	return Message{ID: id, EventID: c.EventID, Generation: c.Generation}, err
}

func (Protocol) State(ctx context.Context, db driver.DB) ([]driver.Row, error) {
	rows, _ := db.Query(ctx, `SELECT id::text, event_id, status, generation,
			CASE WHEN lease_until IS NULL THEN NULL ELSE lease_until <= statement_timestamp() END,
			next_attempt_at <= statement_timestamp()
		FROM outbox ORDER BY id`)
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.Row, error) {
		var row driver.Row
		err := r.Scan(&row.ID, &row.EventID, &row.Status, &row.Generation, &row.LeaseExpired, &row.Due)
		return row, err
	})
}

// Expire ends a lease now: outboxlab's checks never wait out 30 seconds.
func (Protocol) Expire(ctx context.Context, db driver.DB, id string) error {
	_, err := db.Exec(ctx, `UPDATE outbox SET lease_until = statement_timestamp() - interval '1 second'
		WHERE id = $1 AND status = 'INPROGRESS'`, id)
	return err
}

func (Protocol) Due(ctx context.Context, db driver.DB, id string) error {
	_, err := db.Exec(ctx, `UPDATE outbox SET next_attempt_at = statement_timestamp() - interval '1 second'
		WHERE id = $1`, id)
	return err
}

// Age moves the lease deadline back, so outboxlab can hold the claim to
// the 30 seconds Directives promises.
func (Protocol) Age(ctx context.Context, db driver.DB, id string, seconds float64) error {
	_, err := db.Exec(ctx, `UPDATE outbox SET lease_until = lease_until - make_interval(secs => $2)
		WHERE id = $1 AND status = 'INPROGRESS'`, id, seconds)
	return err
}
