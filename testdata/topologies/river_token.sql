-- Token variant (issue 23) of testdata/libraries/fixed/river.sql, for the
-- topologies that forget (docs/topologies.md, docs/libraries.md). What changed:
-- a uuid column of ours, river_job.fence_token, is stamped with
-- gen_random_uuid() by the fetch (JobGetAvailable's SET) and returned as the
-- generation; complete and retry compare it (river_job.fence_token =
-- @generation::uuid) where the fixed file compared river_job.attempt =
-- @generation. attempt is still River's counter and the attempt budget (the fetch
-- still bumps it, max_attempts still counts fetches). The retry's discard decision
-- and error entry read attempt from the row instead of from @generation, which
-- is now the token; an update that passes the token guard sees exactly the
-- attempt its fetch set. state returns fence_token as generation. And the
-- final SELECT of complete and retry, which we narrow to id and applied, also
-- returns (id, false) when the job row does not exist: after a rewind that lost a
-- job's insert, River's SELECT returns no row at all, which the format's applied
-- column does not allow (the fixed file fails so on async-commit, seed 1).
-- On a server that forgets an acknowledged commit (async-commit: a crash under
-- synchronous_commit=off; async-standby: a failover to a standby that was behind),
-- a counter fence comes back with the rewind: the next claim hands out the lost
-- claim's number again, and the lost claim's worker can finish the new claim.
-- A random token cannot be handed out twice, so the lost claim's outcome finds no
-- row to apply to. The library SQL below is the fixed file's, quoted as data;
-- only the lines named above differ, and its source note follows unchanged.
-- expect: single pass
-- expect: async-commit pass
-- expect: async-standby pass
-- expect: sync-standby pass
--
-- Fixed: river (testdata/libraries/river.sql) with JobSetStateIfRunningMany (complete and retry) fenced on the fetched attempt: the UPDATE's WHERE also requires river_job.attempt = @generation, so an outcome applies only to the attempt that fetched the job. And JobRescueMany re-checks state = 'running' and the stuck horizon in its own WHERE (River's fix at #1302), so a job finished or fetched again between JobGetStuck and JobRescueMany is left alone.
-- Library: River (Go job queue on PostgreSQL: river_job table, FOR UPDATE SKIP LOCKED fetch, maintenance rescuer)
-- Repository: https://github.com/riverqueue/river
-- Commit: fdf6cdf12567a5b70c003f5ff850273f09e7efcf (2 commits after tag v0.43.0, "Make jobs cancelled due to a soft stop immediately available (#1290)")
-- Version: v0.43.0-2-gfdf6cdf
-- Sources:
--   riverdriver/riverpgxv5/internal/dbsqlc/river_job.sql: CREATE TYPE river_job_state, CREATE TABLE river_job,
--     queries JobGetAvailable (claim), JobSetStateIfRunningMany (complete and retry), JobGetStuck and
--     JobRescueMany (rescue); JobSchedule (the retryable -> available promotion the due fixture imitates)
--   (there is no JobSetCompleteIfRunningMany at this commit: completions and errors both go through
--   JobSetStateIfRunningMany, called by internal/jobcompleter/job_completer.go)
--   internal/maintenance/job_rescuer.go: JobRescuer.runOnce / makeRetryDecision (RescueAfter default 1h,
--     retry when attempt < max_attempts, else discard)
--   internal/jobexecutor/job_executor.go: JobExecutor.reportError (discard when attempt >= max_attempts,
--     else JobSetStateErrorRetryable / JobSetStateErrorAvailable)
--   riverdriver/river_driver_interface.go: JobSetStateCompleted, JobSetStateDiscarded, JobSetStateErrorRetryable
--   internal/retrypolicy/default.go: NextRetryAt (errorCount^4 seconds, +/-10% jitter)
--   producer.go: the fetch (maxAttemptedBy = 100, MaxToLock = free worker slots)
--
-- How River works: a producer fetches up to its free worker slots with JobGetAvailable, a single
-- UPDATE ... FROM (SELECT ... FOR UPDATE SKIP LOCKED) that sets state 'running', bumps `attempt` and
-- stamps attempted_at. There is no lease column and no heartbeat: completion and errors go through
-- the batch completer's JobSetStateIfRunningMany, which writes the new state only while the row is
-- 'running' (whatever attempt is running now). Errored jobs become 'retryable' (or 'discarded' once
-- attempt >= max_attempts); the scheduler later promotes due 'retryable' rows to 'available'. A job
-- whose worker vanished stays 'running' until the leader's JobRescuer finds it (attempted_at older than
-- RescueAfter, default 1 hour) with JobGetStuck and rewrites it with JobRescueMany to 'retryable'
-- (attempt < max_attempts) or 'discarded'.
--
-- Adaptations:
--   - event_id: a text column added to river_job, set by enqueue (River's own payload is `args` jsonb;
--     enqueue also writes {"event_id": ...} there); `kind` is fixed to 'outboxlab'.
--   - Table trimmed to the columns the statements touch (unique_key, unique_states and tags dropped);
--     River's own state enum and its finalized_or_finalized_at_null constraint kept.
--   - claim: JobGetAvailable with @queue fixed to 'default', sqlc.narg('now') NULL (so now()),
--     @max_to_lock = 2 (batch=2; River's is the queue's free worker slots, MaxWorkers minus running),
--     @max_attempted_by = 100 (producer.go's constant), @attempted_by = @worker. Its RETURNING river_job.*
--     is narrowed to id, event_id and attempt::bigint AS generation: River bumps attempt on every fetch,
--     so it is returned as the generation (River's complete/retry do not check it).
--   - order=any: River orders by priority, scheduled_at, id, so a retried job that became due later
--     goes behind jobs enqueued after it; that is not enqueue order.
--   - complete / retry: JobSetStateIfRunningMany with each unnest(@array) parameter replaced by a
--     one-element ARRAY[...] (the batch completer's batch of one). Its final SELECT returns the row
--     either way; it is narrowed to id plus a boolean `applied` (true for the rows of its `updated` CTE).
--   - complete sets the parameters JobSetStateCompleted builds: state 'completed', finalized_at = now().
--   - retry sets what JobExecutor.reportError builds: 'discarded' with finalized_at when the executor's
--     attempt >= max_attempts, else 'retryable' with scheduled_at = the next retry, plus an error entry.
--     The executor decides from its in-memory JobRow.Attempt, which is the attempt its fetch returned; the
--     file passes that as @generation::int in the job_input (a value River sends, not a guard: the
--     UPDATE's WHERE is River's, state = 'running' only).
--   - Backoff: River's default retry policy waits errorCount^4 seconds (1s, 16s, ...) with +/-10% jitter,
--     and a retry shorter than the 5s scheduler interval goes straight to 'available'. A 1-second backoff
--     would end by the wall clock inside a check, so this file waits errorCount^4 MINUTES without jitter;
--     every retry therefore takes the 'retryable' branch and becomes claimable through the due fixture,
--     which does the scheduler's promotion (JobSchedule's non-unique path: state 'available').
--   - lease=1h: JobRescuer's RescueAfter default. The per-job timeout check in makeRetryDecision (default
--     ClientJobTimeout 1 minute) is always met once a job is an hour old, so it is left out.
--   - policy=lenient: River has no lease; a worker past the rescue horizon may still finish (its
--     JobSetStateIfRunning applies while the row is 'running') until the rescuer or another fetch takes it.
--   - max_attempts=2 (River's default is 25; MaxAttemptsDefault), set by enqueue; chosen small so that
--     counterexamples stay short: the budget is spent in two claims.
--   - rescue: the rescuer's two round trips (JobGetStuck, then Go's makeRetryDecision, then JobRescueMany)
--     become two statements in one transaction: a temp table holds JobGetStuck's rows with the decision
--     computed in SQL (retryable at errorCount^4 minutes when attempt < max_attempts, else discarded with
--     finalized_at), and JobRescueMany's unnest(@arrays) read that table. @stuck_horizon = now() - 1 hour,
--     @after_id = 0, @max = 10000 (one batch; riversharedmaintenance.BatchSizeDefault). River runs the two queries outside
--     any transaction, so a job finished between them is still rewritten; here that window is narrower
--     (only a row-lock wait inside JobRescueMany, which, like River's, does not re-check state).
--   - States: available, retryable, scheduled -> READY (due: available with scheduled_at <= now());
--     running -> INPROGRESS; completed -> SENT; discarded, cancelled -> DEAD.
--   - lease_expired for running rows: attempted_at < now() - 1 hour, JobGetStuck's own test.
-- Fix: complete and retry (JobSetStateIfRunningMany's `updated` CTE) add `AND river_job.attempt = @generation::int` to the WHERE, restoring fencing (a stale owner's complete/retry no longer applies to a newer attempt) and with it attempt_budget (a stale retry computed its discard decision from its old attempt and sent an exhausted job back to retryable).
-- Fix: rescue (JobRescueMany) adds `AND river_job.state = 'running' AND river_job.attempted_at < (now() - interval '1 hour')` to its
--   UPDATE's WHERE, which matched by id only: restores terminal and fencing under concurrency (issue 27). JobGetStuck's rows are read
--   by one statement and rewritten by the next; a complete, a retry or a reclaim that commits between the two (or that holds the row
--   while JobRescueMany waits for it) was overwritten with the rescue's decision: a finished job back to retryable or discarded, a
--   fresh attempt rescued. With the re-check in the UPDATE's own WHERE, the new snapshot (or, after a lock wait, PostgreSQL's
--   re-evaluation of that WHERE on the new row version) leaves such a row alone. This is River's own fix (issue #1302, PR #1373:
--   "require jobs to still be running with attempted_at before the original rescue horizon"); now() is the rescue transaction's start,
--   the same horizon JobGetStuck used. Found by `outboxlab check --concurrent` (not linearizable: a Complete applied while a Rescue
--   ran, the row READY or DEAD afterwards, 5 runs of 5 and the issue's seeds).
-- outboxlab: fence=token
-- outboxlab: order=any
-- outboxlab: batch=2
-- outboxlab: lease=1h
-- outboxlab: policy=lenient
-- outboxlab: max_attempts=2

-- name: schema
CREATE TYPE river_job_state AS ENUM(
    'available',
    'cancelled',
    'completed',
    'discarded',
    'pending',
    'retryable',
    'running',
    'scheduled'
);

CREATE TABLE river_job (
    id bigserial PRIMARY KEY,
    event_id text NOT NULL UNIQUE,
    args jsonb NOT NULL DEFAULT '{}',
    attempt smallint NOT NULL DEFAULT 0,
    attempted_at timestamptz,
    attempted_by text[],
    fence_token uuid,
    created_at timestamptz NOT NULL DEFAULT now(),
    errors jsonb[],
    finalized_at timestamptz,
    kind text NOT NULL,
    max_attempts smallint NOT NULL DEFAULT 25,
    metadata jsonb NOT NULL DEFAULT '{}',
    priority smallint NOT NULL DEFAULT 1,
    queue text NOT NULL DEFAULT 'default',
    state river_job_state NOT NULL DEFAULT 'available',
    scheduled_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT finalized_or_finalized_at_null CHECK (
        (finalized_at IS NULL AND state NOT IN ('cancelled', 'completed', 'discarded')) OR
        (finalized_at IS NOT NULL AND state IN ('cancelled', 'completed', 'discarded'))
    ),
    CONSTRAINT priority_in_range CHECK (priority >= 1 AND priority <= 4),
    CONSTRAINT queue_length CHECK (char_length(queue) > 0 AND char_length(queue) < 128),
    CONSTRAINT kind_length CHECK (char_length(kind) > 0 AND char_length(kind) < 128)
);

-- name: enqueue
INSERT INTO river_job (event_id, args, kind, max_attempts)
VALUES (@event_id, jsonb_build_object('event_id', @event_id::text), 'outboxlab', 2)

-- name: claim
WITH locked_jobs AS (
    SELECT
        *
    FROM
        river_job
    WHERE
        state = 'available'
        AND queue = 'default'::text
        AND scheduled_at <= coalesce(NULL::timestamptz, now())
    ORDER BY
        priority ASC,
        scheduled_at ASC,
        id ASC
    LIMIT 2::integer
    FOR UPDATE
    SKIP LOCKED
)
UPDATE
    river_job
SET
    state = 'running',
    attempt = river_job.attempt + 1,
    attempted_at = coalesce(NULL::timestamptz, now()),
    fence_token = gen_random_uuid(),
    attempted_by = array_append(
        CASE WHEN array_length(river_job.attempted_by, 1) >= 100::int
        -- +2 instead of +1 because Postgres array indexing starts at 1, not 0.
        THEN river_job.attempted_by[array_length(river_job.attempted_by, 1) + 2 - 100:]
        ELSE river_job.attempted_by
        END,
        @worker::text
    )
FROM
    locked_jobs
WHERE
    river_job.id = locked_jobs.id
RETURNING
    river_job.id, river_job.event_id, river_job.fence_token AS generation;

-- name: complete
WITH job_input AS (
    SELECT
        unnest(ARRAY[@id::bigint])                   AS id,
        unnest(ARRAY[false]::boolean[])              AS attempt_do_update,
        unnest(ARRAY[0]::int[])                      AS attempt,
        unnest(ARRAY[false]::boolean[])              AS errors_do_update,
        unnest(ARRAY[NULL]::jsonb[])                 AS errors,
        unnest(ARRAY[true]::boolean[])               AS finalized_at_do_update,
        unnest(ARRAY[now()]::timestamptz[])          AS finalized_at,
        unnest(ARRAY[false]::boolean[])              AS metadata_do_merge,
        unnest(ARRAY['{}']::jsonb[])                 AS metadata_updates,
        unnest(ARRAY[false]::boolean[])              AS scheduled_at_do_update,
        unnest(ARRAY[now()]::timestamptz[])          AS scheduled_at,
        unnest(ARRAY['completed']::text[])::river_job_state AS state
),
updated AS (
    UPDATE river_job
    SET
        attempt = CASE
            WHEN river_job.state = 'running'
                 AND NOT (job_input.state IN ('retryable','scheduled') AND river_job.metadata ? 'cancel_attempted_at')
                 AND job_input.attempt_do_update
            THEN job_input.attempt
            ELSE river_job.attempt
        END,
        errors = CASE
            WHEN river_job.state = 'running'
                 AND job_input.errors_do_update
            THEN array_append(river_job.errors, job_input.errors)
            ELSE river_job.errors
        END,
        finalized_at = CASE
            WHEN river_job.state = 'running'
                 AND (job_input.state IN ('retryable','scheduled') AND river_job.metadata ? 'cancel_attempted_at')
            THEN coalesce(NULL::timestamptz, now())
            WHEN river_job.state = 'running'
                 AND job_input.finalized_at_do_update
            THEN job_input.finalized_at
            ELSE river_job.finalized_at
        END,
        metadata = CASE
            WHEN job_input.metadata_do_merge
            THEN river_job.metadata || job_input.metadata_updates
            ELSE river_job.metadata
        END,
        scheduled_at = CASE
            WHEN river_job.state = 'running'
                 AND NOT (job_input.state IN ('retryable','scheduled') AND river_job.metadata ? 'cancel_attempted_at')
                 AND job_input.scheduled_at_do_update
            THEN job_input.scheduled_at
            ELSE river_job.scheduled_at
        END,
        state = CASE
            WHEN river_job.state = 'running'
                 AND (job_input.state IN ('retryable','scheduled') AND river_job.metadata ? 'cancel_attempted_at')
            THEN 'cancelled'::river_job_state
            WHEN river_job.state = 'running'
            THEN job_input.state
            ELSE river_job.state
        END
    FROM job_input
    WHERE river_job.id = job_input.id
      AND river_job.fence_token = @generation::uuid
      AND (river_job.state = 'running' OR job_input.metadata_do_merge)
    RETURNING river_job.*
)
SELECT river_job.id, false AS applied
FROM river_job
JOIN job_input ON river_job.id = job_input.id
WHERE NOT EXISTS (
    SELECT 1
    FROM updated
    WHERE updated.id = river_job.id
)
UNION ALL
SELECT updated.id, true AS applied
FROM updated
UNION ALL
-- ours: a job that is gone (a rewind lost its insert) refuses the outcome in a row of its own
SELECT @id::bigint AS id, false AS applied
WHERE NOT EXISTS (SELECT 1 FROM river_job WHERE river_job.id = @id::bigint)
ORDER BY id;

-- name: retry
WITH executor AS (
    -- JobExecutor.reportError's decision, from the JobRow its fetch returned
    -- (the fetched attempt: the row's, whenever the token guard below holds).
    SELECT j.id, j.attempt,
           (j.attempt >= j.max_attempts) AS discard,
           now() + make_interval(mins => power(coalesce(array_length(j.errors, 1), 0) + 1, 4)::int) AS next_retry
    FROM river_job j
    WHERE j.id = @id::bigint
),
job_input AS (
    SELECT
        unnest(ARRAY[executor.id])                   AS id,
        unnest(ARRAY[false]::boolean[])              AS attempt_do_update,
        unnest(ARRAY[0]::int[])                      AS attempt,
        unnest(ARRAY[true]::boolean[])               AS errors_do_update,
        unnest(ARRAY[jsonb_build_object('at', now(), 'attempt', executor.attempt::int, 'error', 'outboxlab retry')]) AS errors,
        unnest(ARRAY[executor.discard])              AS finalized_at_do_update,
        unnest(ARRAY[now()]::timestamptz[])          AS finalized_at,
        unnest(ARRAY[false]::boolean[])              AS metadata_do_merge,
        unnest(ARRAY['{}']::jsonb[])                 AS metadata_updates,
        unnest(ARRAY[NOT executor.discard])          AS scheduled_at_do_update,
        unnest(ARRAY[executor.next_retry])           AS scheduled_at,
        unnest(ARRAY[CASE WHEN executor.discard THEN 'discarded' ELSE 'retryable' END]::text[])::river_job_state AS state
    FROM executor
),
updated AS (
    UPDATE river_job
    SET
        attempt = CASE
            WHEN river_job.state = 'running'
                 AND NOT (job_input.state IN ('retryable','scheduled') AND river_job.metadata ? 'cancel_attempted_at')
                 AND job_input.attempt_do_update
            THEN job_input.attempt
            ELSE river_job.attempt
        END,
        errors = CASE
            WHEN river_job.state = 'running'
                 AND job_input.errors_do_update
            THEN array_append(river_job.errors, job_input.errors)
            ELSE river_job.errors
        END,
        finalized_at = CASE
            WHEN river_job.state = 'running'
                 AND (job_input.state IN ('retryable','scheduled') AND river_job.metadata ? 'cancel_attempted_at')
            THEN coalesce(NULL::timestamptz, now())
            WHEN river_job.state = 'running'
                 AND job_input.finalized_at_do_update
            THEN job_input.finalized_at
            ELSE river_job.finalized_at
        END,
        metadata = CASE
            WHEN job_input.metadata_do_merge
            THEN river_job.metadata || job_input.metadata_updates
            ELSE river_job.metadata
        END,
        scheduled_at = CASE
            WHEN river_job.state = 'running'
                 AND NOT (job_input.state IN ('retryable','scheduled') AND river_job.metadata ? 'cancel_attempted_at')
                 AND job_input.scheduled_at_do_update
            THEN job_input.scheduled_at
            ELSE river_job.scheduled_at
        END,
        state = CASE
            WHEN river_job.state = 'running'
                 AND (job_input.state IN ('retryable','scheduled') AND river_job.metadata ? 'cancel_attempted_at')
            THEN 'cancelled'::river_job_state
            WHEN river_job.state = 'running'
            THEN job_input.state
            ELSE river_job.state
        END
    FROM job_input
    WHERE river_job.id = job_input.id
      AND river_job.fence_token = @generation::uuid
      AND (river_job.state = 'running' OR job_input.metadata_do_merge)
    RETURNING river_job.*
)
SELECT river_job.id, false AS applied
FROM river_job
JOIN job_input ON river_job.id = job_input.id
WHERE NOT EXISTS (
    SELECT 1
    FROM updated
    WHERE updated.id = river_job.id
)
UNION ALL
SELECT updated.id, true AS applied
FROM updated
UNION ALL
-- ours: a job that is gone (a rewind lost its insert) refuses the outcome in a row of its own
SELECT @id::bigint AS id, false AS applied
WHERE NOT EXISTS (SELECT 1 FROM river_job WHERE river_job.id = @id::bigint)
ORDER BY id;

-- name: rescue
-- JobGetStuck (@after_id = 0, @stuck_horizon = now() - RescueAfter, @max = 10000),
-- with makeRetryDecision's outcome computed per row.
CREATE TEMP TABLE rescuer_stuck ON COMMIT DROP AS
SELECT stuck.id,
       jsonb_build_object('at', now(), 'attempt', greatest(stuck.attempt, 0),
                          'error', 'Stuck job rescued by JobRescuer', 'trace', '') AS error,
       CASE WHEN stuck.attempt < greatest(stuck.max_attempts, 0) THEN NULL ELSE now() END AS finalized_at,
       CASE WHEN stuck.attempt < greatest(stuck.max_attempts, 0)
            THEN now() + make_interval(mins => power(coalesce(array_length(stuck.errors, 1), 0) + 1, 4)::int)
            ELSE stuck.scheduled_at END AS scheduled_at,
       CASE WHEN stuck.attempt < greatest(stuck.max_attempts, 0) THEN 'retryable' ELSE 'discarded' END AS state
FROM (
    SELECT *
    FROM river_job
    WHERE state = 'running'
        AND id > 0::bigint
        AND attempted_at < (now() - interval '1 hour')::timestamptz
    ORDER BY id
    LIMIT 10000
) AS stuck;

UPDATE river_job
SET
    errors = array_append(errors, updated_job.error),
    finalized_at = updated_job.finalized_at,
    scheduled_at = updated_job.scheduled_at,
    metadata = river_job.metadata || jsonb_build_object(
        'river:rescue_count',
        coalesce(
            CASE
                WHEN jsonb_typeof(river_job.metadata -> 'river:rescue_count') = 'number'
                    THEN (river_job.metadata ->> 'river:rescue_count')::int
            END,
            0
        ) + 1
    ),
    state = updated_job.state
FROM (
    SELECT
        id,
        error,
        finalized_at,
        scheduled_at,
        state::river_job_state AS state
    FROM rescuer_stuck
) AS updated_job
WHERE river_job.id = updated_job.id
  -- re-checked on the row the UPDATE writes (River's fix, #1302/#1373): still running, still past the horizon
  AND river_job.state = 'running'
  AND river_job.attempted_at < (now() - interval '1 hour')::timestamptz;

-- name: state
SELECT id, event_id,
       CASE state
           WHEN 'available' THEN 'READY'
           WHEN 'retryable' THEN 'READY'
           WHEN 'scheduled' THEN 'READY'
           WHEN 'pending' THEN 'READY'
           WHEN 'running' THEN 'INPROGRESS'
           WHEN 'completed' THEN 'SENT'
           WHEN 'discarded' THEN 'DEAD'
           WHEN 'cancelled' THEN 'DEAD'
       END AS status,
       fence_token AS generation,
       CASE WHEN state = 'running' THEN attempted_at < now() - interval '1 hour' END AS lease_expired,
       (state = 'available' AND scheduled_at <= now()) AS due
FROM river_job
ORDER BY id;

-- name: expire
UPDATE river_job SET attempted_at = now() - interval '1 hour 1 second'
WHERE id = @id AND state = 'running';

-- name: due
-- The scheduler's promotion (JobSchedule, non-unique path) once the retry time has come.
UPDATE river_job
SET scheduled_at = least(scheduled_at, now() - interval '1 second'),
    state = CASE WHEN state IN ('retryable', 'scheduled') THEN 'available'::river_job_state ELSE state END
WHERE id = @id AND state IN ('available', 'retryable', 'scheduled');

-- name: age
UPDATE river_job SET attempted_at = attempted_at - make_interval(secs => @seconds)
WHERE id = @id AND state = 'running';
