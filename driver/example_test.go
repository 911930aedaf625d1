package driver_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/driver"
)

// Job and Repo stand for a team's existing repository code: methods that
// take a pgx connection or transaction, as a relay already calls them.
type Job struct {
	ID, EventID string
	Generation  int64
}

type Repo struct{}

func (Repo) Migrate(ctx context.Context, db driver.DB) error {
	_, err := db.Exec(ctx, `CREATE TABLE jobs (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		event_id text NOT NULL UNIQUE, status text NOT NULL DEFAULT 'READY',
		generation bigint NOT NULL DEFAULT 0, lease_until timestamptz,
		next_attempt_at timestamptz NOT NULL DEFAULT now())`)
	return err
}

func (Repo) ClaimNext(ctx context.Context, db driver.DB, worker string) (*Job, error) {
	var j Job
	err := db.QueryRow(ctx, `UPDATE jobs SET status = 'INPROGRESS', generation = generation + 1,
			lease_until = statement_timestamp() + interval '30 seconds'
		WHERE id = (SELECT id FROM jobs WHERE status = 'READY' AND next_attempt_at <= statement_timestamp()
			OR status = 'INPROGRESS' AND lease_until <= statement_timestamp()
			ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING id::text, event_id, generation`).Scan(&j.ID, &j.EventID, &j.Generation)
	if err != nil {
		return nil, err // pgx.ErrNoRows when nothing is claimable
	}
	return &j, nil
}

// adapter is all a team writes: each method a call of the repository, its
// results in the suite's terms. Repo's other methods (MarkSent, State...)
// would be adapted the same way; they are left out to keep the example
// short, so adapter embeds driver.Protocol for them.
type adapter struct {
	driver.Protocol
	repo Repo
}

func (a adapter) Install(ctx context.Context, db driver.DB) error { return a.repo.Migrate(ctx, db) }

func (a adapter) Claim(ctx context.Context, db driver.DB, worker string) ([]*driver.Claimed, error) {
	j, err := a.repo.ClaimNext(ctx, db, worker)
	if err != nil || j == nil {
		return nil, ignoreNoRows(err)
	}
	return []*driver.Claimed{{ID: j.ID, EventID: j.EventID, Generation: j.Generation}}, nil
}

func ignoreNoRows(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	return err
}

// The adapter is registered once, in an init function or in TestMain
// before outboxlabtest.Main, so every worker process has it; a test then
// runs outboxlabtest.CheckDriver(t, "jobs").
func Example() {
	driver.Register("jobs", adapter{})
	_, err := driver.Lookup("jobs")
	fmt.Println(err)
	// Output: <nil>
}
