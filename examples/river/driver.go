package riverlab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/outboxlab/outboxlab/driver"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivershared/riverpilot"
	"github.com/riverqueue/river/rivershared/riversharedmaintenance"
	"github.com/riverqueue/river/rivertype"
)

// The choices River leaves to its user, made here.
const (
	// Queue is the one queue every job goes to and every fetch reads:
	// River's default queue (river.QueueDefault, "default").
	Queue = river.QueueDefault
	// Kind is the job kind of an event (River's JobArgs.Kind).
	Kind = "outboxlab"
	// MaxAttempts is each job's attempt budget, set by Enqueue through
	// InsertOpts.MaxAttempts. River's default is 25
	// (river.MaxAttemptsDefault); 2 spends the budget in two claims, so
	// counterexamples stay short (river.sql's choice too).
	MaxAttempts = 2
	// RescueAfter is the rescue horizon: a job running for longer is
	// stuck, and the rescuer takes it back. It is River's default
	// (Config.RescueStuckJobsAfter unset: JobRescuerRescueAfterDefault in
	// internal/maintenance/job_rescuer.go, 1 hour) and the driver's Lease:
	// River has no lease, and this is the only time after which another
	// worker can get a running job.
	RescueAfter = time.Hour
	// Batch is the most jobs one fetch locks. River's producer locks as
	// many as it has free worker slots (MaxWorkers minus running jobs);
	// 2 makes a claim of several rows possible, as in river.sql.
	Batch = 2
)

// River's constants this driver passes where River's services pass them.
const (
	// maxAttemptedBy is producer.go's dispatchWork constant (the cap on a
	// job's attempted_by array).
	maxAttemptedBy = 100
	// schedulerInterval is the job scheduler's default interval
	// (maintenance.JobSchedulerIntervalDefault, internal): the executor's
	// SchedulerInterval, and the scheduler's look-ahead.
	schedulerInterval = 5 * time.Second
	// jobTimeout is the client's default job timeout (river.JobTimeoutDefault),
	// which the rescuer's makeRetryDecision waits out before rescuing.
	jobTimeout = river.JobTimeoutDefault
	// batchSize is the maintenance services' default batch
	// (riversharedmaintenance.BatchSizeDefault): the rescuer's JobGetStuck
	// limit and the scheduler's JobSchedule limit.
	batchSize = riversharedmaintenance.BatchSizeDefault
)

// EventArgs is an event as River job args: the event id is stored in the
// job's args ({"event_id": ...}), River's own payload column, and State
// reads it back with args->>'event_id'.
type EventArgs struct {
	EventID string `json:"event_id"`
}

// Kind is River's job kind of an event.
func (EventArgs) Kind() string { return Kind }

// Protocol is River as an outboxlab Go driver.
type Protocol struct {
	// client is an insert-only River client (no pool, no queues, never
	// started): Enqueue inserts through its InsertTx, and its driver
	// (riverpgxv5) and pilot (River's StandardPilot) run every other
	// query.
	client *river.Client[pgx.Tx]
}

var _ interface {
	driver.Protocol
	driver.Rescuer
	driver.Ager
} = (*Protocol)(nil)

// New builds the driver. Schema is left empty everywhere (the client, the
// migrator, each query's params): River then names its tables unqualified
// and search_path, which the suite sets to the run's own schema, decides
// where they are.
func New() (*Protocol, error) {
	client, err := river.NewClient(riverpgxv5.New(nil), &river.Config{
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		MaxAttempts: MaxAttempts,
	})
	if err != nil {
		return nil, err
	}
	return &Protocol{client: client}, nil
}

// Directives are river.sql's: River fetches by priority, scheduled_at and
// id (not enqueue order); a job's attempt counter, bumped by every fetch,
// is the generation; a worker past the rescue horizon can still finish
// its job until the rescuer or another fetch takes it (lenient).
func (*Protocol) Directives() driver.Directives {
	return driver.Directives{AnyOrder: true, Lease: RescueAfter, Batch: Batch, Lenient: true,
		MaxAttempts: MaxAttempts, Fence: driver.FenceCounter}
}

// Install runs River's own migrations (rivermigrate, the main line up to
// its latest version) one per transaction, as rivermigrate's Migrate does
// on a pool: MigrateTx with MaxSteps 1 in a transaction of its own, until
// none is left. One transaction for all of them fails: version 004 adds
// the enum value 'pending', which version 006 may use only once 004 has
// committed.
func (p *Protocol) Install(ctx context.Context, db driver.DB) error {
	conn, ok := db.(*pgx.Conn)
	if !ok {
		return fmt.Errorf("riverlab: Install needs the harness's *pgx.Conn (River commits each migration), not a %T", db)
	}
	migrator, err := rivermigrate.New(p.client.Driver(), &rivermigrate.Config{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return err
	}
	for {
		applied, err := migrateOne(ctx, conn, migrator)
		if err != nil || !applied {
			return err
		}
	}
}

func migrateOne(ctx context.Context, conn *pgx.Conn, migrator *rivermigrate.Migrator[pgx.Tx]) (applied bool, err error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	res, err := migrator.MigrateTx(ctx, tx, rivermigrate.DirectionUp, &rivermigrate.MigrateOpts{MaxSteps: 1})
	if err != nil {
		return false, err
	}
	return len(res.Versions) > 0, tx.Commit(ctx)
}

// Enqueue inserts the event as a job with River's client:
// Client.InsertTx, queue Queue, MaxAttempts attempts, River's defaults
// for the rest (priority 1, state available, scheduled_at the server's
// now()).
func (p *Protocol) Enqueue(ctx context.Context, db driver.DB, eventID string) error {
	tx, err := asTx(db)
	if err != nil {
		return err
	}
	_, err = p.client.InsertTx(ctx, tx, EventArgs{EventID: eventID},
		&river.InsertOpts{Queue: Queue, MaxAttempts: MaxAttempts})
	return err
}

// Claim is River's fetch: the pilot's JobGetAvailable with the params
// River's producer passes (producer.go, dispatchWork): the worker's name
// as the ClientID (River's default ClientID is the host name and a time;
// here each outboxlab worker is one River client), Batch jobs at most,
// maxAttemptedBy, Now nil (the server's now(), as River's unstubbed
// clock gives), no kind filter (FetchOnlyKnownKinds off). The job's
// attempt is the generation.
func (p *Protocol) Claim(ctx context.Context, db driver.DB, worker string) ([]*driver.Claimed, error) {
	exec, err := p.executor(db)
	if err != nil {
		return nil, err
	}
	res, err := p.client.Pilot().JobGetAvailable(ctx, exec, nil, &riverdriver.JobGetAvailableParams{
		ClientID:       worker,
		MaxAttemptedBy: maxAttemptedBy,
		MaxToLock:      Batch,
		Queue:          Queue,
	})
	if err != nil || res == nil {
		return nil, err
	}
	claimed := make([]*driver.Claimed, 0, len(res.Jobs))
	for _, job := range res.Jobs {
		if err := res.DecodeErrors[job.ID]; err != nil {
			return nil, fmt.Errorf("riverlab: job %d: %w", job.ID, err)
		}
		var args EventArgs
		if err := json.Unmarshal(job.EncodedArgs, &args); err != nil {
			return nil, fmt.Errorf("riverlab: job %d args: %w", job.ID, err)
		}
		claimed = append(claimed, &driver.Claimed{ID: strconv.FormatInt(job.ID, 10),
			EventID: args.EventID, Generation: int64(job.Attempt)})
	}
	return claimed, nil
}

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

// executor is riverpgxv5's riverdriver.Executor on the worker's
// connection or transaction (Driver.UnwrapExecutor).
func (p *Protocol) executor(db driver.DB) (riverdriver.Executor, error) {
	tx, err := asTx(db)
	if err != nil {
		return nil, err
	}
	return p.client.Driver().UnwrapExecutor(tx), nil
}

// serverNow is the server's clock: River's services read Go's, and
// outboxlab's checks must read the server's.
func serverNow(ctx context.Context, db driver.DB) (time.Time, error) {
	var now time.Time
	err := db.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&now)
	return now, err
}

// asTx is the pgx.Tx River's driver takes: the suite's open transaction
// as it is, or the worker's connection, whose statements then run each in
// its own implicit transaction, as River's run on its pool.
func asTx(db driver.DB) (pgx.Tx, error) {
	switch d := db.(type) {
	case pgx.Tx:
		return d, nil
	case *pgx.Conn:
		return connTx{d}, nil
	}
	return nil, fmt.Errorf("riverlab: a Go driver gets a *pgx.Conn or a pgx.Tx, not a %T", db)
}

// connTx gives River's driver a *pgx.Conn as a pgx.Tx, for the statements
// River's queries run; it refuses to begin, commit or roll back: the
// suite owns the connection's transactions.
type connTx struct{ c *pgx.Conn }

var errOwnTx = errors.New("riverlab: River asked for a transaction of its own on the suite's connection")

func (t connTx) Begin(context.Context) (pgx.Tx, error) { return nil, errOwnTx }
func (t connTx) Commit(context.Context) error          { return errOwnTx }
func (t connTx) Rollback(context.Context) error        { return errOwnTx }
func (t connTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	return t.c.CopyFrom(ctx, table, cols, src)
}
func (t connTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.c.SendBatch(ctx, b)
}
func (t connTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }
func (t connTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.c.Prepare(ctx, name, sql)
}
func (t connTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.c.Exec(ctx, sql, args...)
}
func (t connTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.c.Query(ctx, sql, args...)
}
func (t connTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.c.QueryRow(ctx, sql, args...)
}
func (t connTx) Conn() *pgx.Conn { return t.c }
