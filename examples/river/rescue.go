package riverlab

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/outboxlab/outboxlab/driver"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivershared/riverpilot"
	"github.com/riverqueue/river/rivertype"
)

// Rescue is one pass of River's job rescuer, mirrored from
// JobRescuer.runOnce and makeRetryDecision (internal/maintenance/
// job_rescuer.go, internal): the pilot's JobGetStuck for jobs running
// since before the horizon (now minus RescueAfter), in batches of
// batchSize after the last id; per job, cancelled when a cancel was
// attempted, ignored while younger than the job timeout, else retryable
// at the retry policy's next retry while attempts remain, else discarded;
// then the pilot's JobRescueMany with the same horizon. River reads its
// Go clock; the driver reads the server's.
func (p *Protocol) Rescue(ctx context.Context, db driver.DB, _ string) error {
	exec, err := p.executor(db)
	if err != nil {
		return err
	}
	rescuer, ok := p.client.Pilot().(riverpilot.PilotJobRescuer)
	if !ok {
		return errors.New("riverlab: River's pilot has no JobGetStuck")
	}
	now, err := serverNow(ctx, db)
	if err != nil {
		return err
	}
	horizon := now.Add(-RescueAfter)
	var afterID int64
	for {
		stuck, err := rescuer.JobGetStuck(ctx, exec, &riverdriver.JobGetStuckParams{
			AfterID: afterID, Max: batchSize, StuckHorizon: horizon})
		if err != nil {
			return err
		}
		if len(stuck) > 0 {
			afterID = stuck[len(stuck)-1].ID
		}
		rescue := riverdriver.JobRescueManyParams{StuckHorizon: horizon}
		for _, job := range stuck {
			errData, err := json.Marshal(rivertype.AttemptError{At: now, Attempt: max(job.Attempt, 0),
				Error: "Stuck job rescued by JobRescuer"})
			if err != nil {
				return err
			}
			add := func(state rivertype.JobState, finalizedAt *time.Time, scheduledAt time.Time) {
				rescue.ID = append(rescue.ID, job.ID)
				rescue.Error = append(rescue.Error, errData)
				rescue.FinalizedAt = append(rescue.FinalizedAt, finalizedAt)
				rescue.ScheduledAt = append(rescue.ScheduledAt, scheduledAt)
				rescue.State = append(rescue.State, string(state))
			}
			var meta struct {
				CancelAttemptedAt time.Time `json:"cancel_attempted_at"`
			}
			if err := json.Unmarshal(job.Metadata, &meta); err != nil {
				return err
			}
			switch {
			case !meta.CancelAttemptedAt.IsZero():
				add(rivertype.JobStateCancelled, &now, job.ScheduledAt)
			case job.AttemptedAt != nil && now.Sub(*job.AttemptedAt) < jobTimeout:
				// makeRetryDecision's jobRetryDecisionIgnore.
			case job.Attempt < max(job.MaxAttempts, 0):
				add(rivertype.JobStateRetryable, nil, RetryPolicy{Now: now}.NextRetry(job))
			default:
				add(rivertype.JobStateDiscarded, &now, job.ScheduledAt)
			}
		}
		if len(rescue.ID) > 0 {
			if _, err := rescuer.JobRescueMany(ctx, exec, &rescue); err != nil {
				return err
			}
		}
		if len(stuck) < batchSize {
			return nil
		}
	}
}
