package riverlab

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/outboxlab/outboxlab/driver"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"
)

// Complete is what River's job executor sends when a job's Work returns
// nil (JobExecutor.reportResult in internal/jobexecutor/job_executor.go):
// riverdriver.JobSetStateCompleted with the time and no metadata updates,
// through the completer's JobSetStateIfRunningMany. applied: the row the
// query returns is completed with this call's finalized_at.
func (p *Protocol) Complete(ctx context.Context, db driver.DB, c driver.Claimed) (bool, error) {
	id, err := strconv.ParseInt(c.ID, 10, 64)
	if err != nil {
		return false, err
	}
	exec, err := p.executor(db)
	if err != nil {
		return false, err
	}
	now, err := serverNow(ctx, db)
	if err != nil {
		return false, err
	}
	return p.setState(ctx, exec, riverdriver.JobSetStateCompleted(id, now, nil))
}

// Retry is what River's job executor sends when a job's Work returns an
// error, mirrored from JobExecutor.reportError (internal, so not callable):
// discarded once the attempt the fetch returned has reached max_attempts,
// else retryable at the retry policy's next retry (available instead when
// that is within the scheduler's interval, which a backoff in minutes
// never is). The executor decides from the JobRow its fetch returned; the
// driver keeps nothing between calls, so it reads the row with River's
// JobGetByID and puts back the attempt the claim returned: max_attempts
// never changes, and errors feed only the backoff's length.
func (p *Protocol) Retry(ctx context.Context, db driver.DB, c driver.Claimed) (bool, error) {
	id, err := strconv.ParseInt(c.ID, 10, 64)
	if err != nil {
		return false, err
	}
	exec, err := p.executor(db)
	if err != nil {
		return false, err
	}
	now, err := serverNow(ctx, db)
	if err != nil {
		return false, err
	}
	job, err := exec.JobGetByID(ctx, &riverdriver.JobGetByIDParams{ID: id})
	if err != nil {
		return false, err
	}
	job.Attempt = int(c.Generation)
	errData, err := json.Marshal(rivertype.AttemptError{At: now, Attempt: job.Attempt,
		Error: "outboxlab: the worker's Work returned an error"})
	if err != nil {
		return false, err
	}
	if job.Attempt >= job.MaxAttempts {
		return p.setState(ctx, exec, riverdriver.JobSetStateDiscarded(id, now, errData, nil))
	}
	next := RetryPolicy{Now: now}.NextRetry(job)
	if next.Sub(now) <= schedulerInterval {
		return p.setState(ctx, exec, riverdriver.JobSetStateErrorAvailable(id, next, errData, nil))
	}
	return p.setState(ctx, exec, riverdriver.JobSetStateErrorRetryable(id, next, errData, nil))
}

// setState is River's completer for one job: the one-element arrays of
// jobcompleter.setStateParamsToMany (internal/jobcompleter, the
// InlineCompleter's; the BatchCompleter builds the same for a batch of
// one), Now nil as River's unstubbed clock gives, through the pilot's
// JobSetStateIfRunningMany. The query returns the row whether or not it
// updated it; applied is whether the row now holds what this call wrote
// (its state and its own timestamp), which River's completer does not
// ask.
func (p *Protocol) setState(ctx context.Context, exec riverdriver.Executor, params *riverdriver.JobSetStateIfRunningParams) (bool, error) {
	rows, err := p.client.Pilot().JobSetStateIfRunningMany(ctx, exec, &riverdriver.JobSetStateIfRunningManyParams{
		Attempt:         []*int{params.Attempt},
		ErrData:         [][]byte{params.ErrData},
		FinalizedAt:     []*time.Time{params.FinalizedAt},
		ID:              []int64{params.ID},
		MetadataDoMerge: []bool{params.MetadataDoMerge},
		MetadataUpdates: [][]byte{params.MetadataUpdates},
		ScheduledAt:     []*time.Time{params.ScheduledAt},
		State:           []rivertype.JobState{params.State},
	})
	if err != nil || len(rows) != 1 {
		return false, err
	}
	row := rows[0]
	if row.State != params.State {
		return false, nil
	}
	if params.FinalizedAt != nil {
		return row.FinalizedAt != nil && row.FinalizedAt.Equal(*params.FinalizedAt), nil
	}
	return row.ScheduledAt.Equal(*params.ScheduledAt), nil
}

// RetryPolicy is the client retry policy (river.ClientRetryPolicy, River's
// Config.RetryPolicy) the executor and the rescuer use here: River's
// default's shape (DefaultClientRetryPolicy: (errors+1)^4 seconds) in
// minutes and without jitter, from the server's clock. River's default
// waits 1 second after a first error, which would end inside a check;
// outboxlab ends a backoff only with its Due fixture.
type RetryPolicy struct{ Now time.Time }

var _ river.ClientRetryPolicy = RetryPolicy{}

// NextRetry is (errors+1)^4 minutes after Now.
func (p RetryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	n := len(job.Errors) + 1
	return p.Now.Add(time.Duration(n*n*n*n) * time.Minute)
}
