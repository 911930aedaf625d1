package riverlab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/driver"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivershared/riversharedmaintenance"
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
