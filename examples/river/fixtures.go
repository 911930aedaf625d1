package riverlab

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/driver"
	"github.com/riverqueue/river/riverdriver"
)

// State reads river_job: available, retryable, scheduled and pending are
// READY (due: available and scheduled_at passed); running is INPROGRESS,
// its lease expired once attempted_at is older than the rescue horizon
// (JobGetStuck's own test); completed is SENT; discarded and cancelled
// are DEAD. The generation is the attempt.
func (*Protocol) State(ctx context.Context, db driver.DB) ([]driver.Row, error) {
	rows, _ := db.Query(ctx, `SELECT id::text, args->>'event_id',
			CASE state
				WHEN 'running' THEN 'INPROGRESS'
				WHEN 'completed' THEN 'SENT'
				WHEN 'discarded' THEN 'DEAD'
				WHEN 'cancelled' THEN 'DEAD'
				ELSE 'READY'
			END,
			attempt::bigint,
			CASE WHEN state = 'running' THEN attempted_at < statement_timestamp() - make_interval(secs => $1) END,
			state = 'available' AND scheduled_at <= statement_timestamp()
		FROM river_job ORDER BY id`, RescueAfter.Seconds())
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.Row, error) {
		var row driver.Row
		err := r.Scan(&row.ID, &row.EventID, &row.Status, &row.Generation, &row.LeaseExpired, &row.Due)
		return row, err
	})
}

// Expire puts a running job's attempted_at past the rescue horizon.
func (*Protocol) Expire(ctx context.Context, db driver.DB, id string) error {
	_, err := db.Exec(ctx, `UPDATE river_job
		SET attempted_at = statement_timestamp() - make_interval(secs => $2) - interval '1 second'
		WHERE id = $1 AND state = 'running'`, id, RescueAfter.Seconds())
	return err
}

// Age moves a running job's attempted_at back.
func (*Protocol) Age(ctx context.Context, db driver.DB, id string, seconds float64) error {
	_, err := db.Exec(ctx, `UPDATE river_job SET attempted_at = attempted_at - make_interval(secs => $2)
		WHERE id = $1 AND state = 'running'`, id, seconds)
	return err
}

// Due ends a waiting job's backoff: its scheduled_at is put in the past
// (the fixture: time passing), then River's job scheduler promotes it:
// the executor's JobSchedule with the scheduler's params
// (maintenance.JobScheduler.runOnce: its batch, now plus its interval as
// a look-ahead), from the server's clock. JobSchedule promotes every due
// retryable or scheduled job, and no other is due: every backoff here is
// minutes long.
func (p *Protocol) Due(ctx context.Context, db driver.DB, id string) error {
	if _, err := db.Exec(ctx, `UPDATE river_job
		SET scheduled_at = least(scheduled_at, statement_timestamp() - interval '1 second')
		WHERE id = $1 AND state IN ('available', 'retryable', 'scheduled')`, id); err != nil {
		return err
	}
	exec, err := p.executor(db)
	if err != nil {
		return err
	}
	now, err := serverNow(ctx, db)
	if err != nil {
		return err
	}
	lookAhead := now.Add(schedulerInterval)
	_, err = exec.JobSchedule(ctx, &riverdriver.JobScheduleParams{Max: batchSize, Now: &lookAhead})
	return err
}
