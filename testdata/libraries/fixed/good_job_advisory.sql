-- Fixed: good_job :advisory (testdata/libraries/good_job_advisory.sql) with the session advisory lock replaced by a stored lease, so that a job is held by what the row says rather than by a lock on one server connection, which a transaction pooler (PgBouncer pool_mode=transaction) moves the worker's transactions off: the claim locks its candidate row FOR NO KEY UPDATE SKIP LOCKED (a transaction-scoped row lock) instead of taking pg_try_advisory_lock, and takes a job whose locked_by_id is NULL or whose locked_at is more than 5 minutes old on a job under its attempt budget (lease=5m; perform's start already writes locked_by_id and locked_at); complete and retry are fenced to the claim (locked_by_id and executions_count, which the claim raises, as in testdata/libraries/fixed/good_job.sql) and no longer unlock; retry_on's budget counts every claim; the claim discards an expired last attempt first.
-- Library: good_job (Ruby on Rails Active Job backend on PostgreSQL: good_jobs table, lock_strategy :advisory)
-- Repository: https://github.com/bensheldon/good_job
-- Commit: 81db22b7cfde2579b2d735e076fa6eaacc65affa ("Release good_job v4.19.2")
-- Version: v4.19.2
-- Strategy: the pinned version has three lock strategies (GoodJob.configuration.lock_strategy: :advisory,
--   the default; :skiplocked; :hybrid). This file is the :advisory strategy (a session-level
--   pg_try_advisory_lock taken in the candidate query holds the job), the default; the :skiplocked one is
--   testdata/libraries/good_job.sql.
-- Sources:
--   app/models/concerns/good_job/advisory_lockable.rb: advisory_lock (the claim query: candidates in a
--     MATERIALIZED CTE "rows", pg_try_advisory_lock in its WHERE, LIMIT, ordered outer SELECT),
--     advisory_lock_bigint_sql (the key: ('x' || substr(md5('good_jobs' || '-' || id::text), 1, 16))::bit(64)::bigint),
--     advisory_lock_classid_sql / advisory_lock_objid_sql (its two halves as pg_locks shows them),
--     owns_advisory_lock_key? (pg_locks with pid = pg_backend_pid()), advisory_locked_key? (any session),
--     advisory_unlock_key / advisory_unlock_key! (pg_advisory_unlock, repeated while this session still
--     owns the key, for a CTE-taken lock)
--   app/models/good_job/job/lockable.rb: with_advisory_lock_claim (advisory_lock's block form: yield the
--     first record, then unlock in the ensure)
--   app/models/good_job/job.rb: perform_with_advisory_lock (the candidate scope: unfinished,
--     dequeueing_ordered, only_scheduled, exclude_paused, limit 1; no locked_by_id condition; executable?
--     = reload.finished_at.blank?), perform (perform start: update!(performed_at, executions_count + 1,
--     locked_by_id, locked_at, lock_type :advisory), interrupted-execution marking; perform end:
--     locked_by_id/locked_at/lock_type cleared, finished_at/error/error_event, save!), Job.enqueue /
--     enqueue_args (the re-enqueue an Active Job retry does on the running job's row), LOCK_TYPES (advisory 0)
--   lib/good_job/configuration.rb: lock_strategy (default :advisory), dequeue_query_sort (default :created_at)
--   lib/good_job/capsule_tracker.rb: id_for_lock (find_or_create_record of the process row)
--   app/models/concerns/good_job/error_events.rb: error_event values (interrupted 0, retried 3, retry_stopped 4)
--   lib/generators/good_job/templates/install/migrations/create_good_jobs.rb.erb: good_jobs and
--     good_job_processes tables
--   lib/good_job.rb: preserve_job_records default true, retry_on_unhandled_error default false
--
-- How good_job (:advisory) works: a performer thread, on its own sticky connection, runs one query that
-- reads the unfinished, scheduled jobs in dequeue order into a MATERIALIZED CTE and returns the first one
-- on which pg_try_advisory_lock(key) succeeds, key = the first 64 bits of md5('good_jobs-' || id). The
-- session-level lock is the claim: nothing is written to claim the job, and the job is the thread's while
-- its connection holds the lock. It reloads the job (executable?: finished_at still blank; if not, it
-- yields nothing and unlocks), then perform stamps performed_at, bumps executions_count and writes
-- locked_by_id (its process), locked_at and lock_type 0, which are informational: no claim reads them.
-- At the end it saves the row by id (ActiveRecord save!): finished_at set and the lock columns cleared for
-- success; for an Active Job retry (retry_on), the job's own row is re-enqueued with a new scheduled_at and
-- serialized executions + 1; once retry_on's attempts are spent the row is finished with the error
-- (discarded). Then the ensure unlocks the key. None of these writes checks the lock or locked_by_id. A
-- job whose worker's connection ends (a crash, a dropped connection, a server restart) loses its lock
-- with it and is claimable at once, with no reaper; the next run marks the earlier execution interrupted.
--
-- Adaptations:
--   - The lock key keeps good_job's md5 shape over a string of the schema's own:
--     ('x' || substr(md5(current_schema() || ':' || 'good_jobs' || '-' || id::text), 1, 16))::bit(64)::bigint,
--     computed by good_job_advisory_key (good_job's key string is its argument), so that runs in other
--     schemas of one database never share a lock. pg_locks is read as good_job reads it (classid = the
--     key's high 32 bits, objid = its low 32 bits, objsubid = 1), plus granted and database = the current
--     database (good_job reads every database's locks; two databases' same-named schemas would collide).
--   - good_job_owns_advisory_lock_key (owns_advisory_lock_key?), good_job_advisory_locked_key
--     (advisory_locked_key?) and good_job_advisory_unlock_key (advisory_unlock_key!: pg_advisory_unlock
--     while this session owns the key) are SQL functions made once by the schema section; good_job sends
--     the same SQL from Ruby.
--   - One connection per worker holds its claims: a good_job performer thread claims only while its
--     connection holds no job lock (it performs the job it claimed before it polls again). The suite's
--     worker may hold several claims at once on its one connection, and a session lock is re-entrant, so
--     the candidate CTE skips the jobs this session already owns (NOT good_job_owns_advisory_lock_key),
--     a case good_job never meets.
--   - claim: five statements in one transaction: id_for_lock's find_or_create_record (INSERT of the process
--     row, one process per worker: md5(concat(@worker, '/process'))::uuid); advisory_lock's query as
--     with_advisory_lock_claim sends it (candidate SQL rendered by hand from the ActiveRecord scope: queue
--     '*', enable_pauses off so exclude_paused adds nothing, dequeue_query_sort :created_at so ORDER BY
--     priority ASC NULLS LAST, created_at ASC; select_limit nil; the rows kept in a temp table); executable?
--     and perform's start as one UPDATE (finished_at IS NULL is the reload's test; update!(performed_at,
--     executions_count + 1, locked_by_id, locked_at, lock_type 0), plus the interrupted marking of
--     error/error_event when performed_at was already set); the ensure's unlock of a locked job that is not
--     executable; the result. In good_job the lock query, the reload and the perform start are separate
--     transactions.
--   - The claim returns id = '<job id>/<process id>' (as in good_job.sql: complete and retry use the job
--     id), event_id, and executions_count AS generation (bumped once per claimed execution; good_job's
--     outcomes do not check it).
--   - seq: an identity column added to good_jobs only for the state query's enqueue order (good_job's ids
--     are random uuids and a retry resets created_at).
--   - event_id: a text column added to good_jobs, set by enqueue (good_job's payload is serialized_params;
--     enqueue writes an Active Job-shaped serialized_params with executions 0 and arguments [event_id]).
--   - Tables trimmed to the columns the statements touch (batches, cron, concurrency, labels dropped);
--     good_job_executions, the per-execution history rows perform inserts and updates, left out (no
--     claim reads them). Rails datetime columns are timestamp without time zone in UTC: Time.current is
--     timezone('UTC', now()).
--   - complete: perform's end for a success, save! of the changed attributes (locked_by_id, locked_at,
--     lock_type, error, error_event, finished_at, updated_at) WHERE id, as in good_job.sql (RETURNING id
--     added, kept in a temp table), then with_advisory_lock_claim's ensure: good_job_advisory_unlock_key.
--     The unlock runs in the save's transaction, just before its commit; good_job runs it just after.
--   - retry: an Active Job `retry_on StandardError, attempts: 2, wait: 1.minute`, the three statements of
--     good_job.sql unchanged (Active Job decides from its in-memory executions, serialized_params
--     executions + 1, read from the row; while executions < 2 Job.enqueue's save! on the running row, then
--     perform's end save! with the lock columns cleared and error_event retried; at 2 the row is finished
--     with the error, retry_stopped: discarded), then the ensure's unlock, then the decision row's id.
--   - max_attempts=2: retry_on's attempts, chosen small (Active Job's default is 5) so that counterexamples
--     stay short: the budget is spent in two claims. Active Job counts only executions that reached a
--     retry; an execution whose connection ended is counted by executions_count but not by retry_on, and
--     nothing makes such a job discarded, so abandoned claims are not bounded (this is what the suite
--     will show).
--   - lease=session: the job is held by the session lock alone. No rescue: a lost lock needs no reaper
--     (Process.cleanup only clears locked_by_id, which no :advisory claim reads).
--   - policy=lenient: a worker whose connection ended can still save the job by id until another claim
--     has taken it (good_job's writes are by id alone).
--   - order=any: a retried job's created_at is reset to the retry time, so it goes behind jobs enqueued
--     after it.
--   - States: finished_at set and error NULL -> SENT (succeeded); finished_at set and error set -> DEAD
--     (discarded); otherwise INPROGRESS (lease_expired false) while some session holds the job's lock,
--     READY (due: scheduled_at <= now) when none does. done=keep: preserve_job_records defaults to true.
-- Fix: claim: the candidate CTE takes `LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED` and the condition `locked_by_id IS NULL OR
--   locked_at <= now - 5 minutes` instead of the session's pg_try_advisory_lock in the outer WHERE (and of the skip of the jobs this
--   session owns); the unlock of a non-executable job is dropped (the row lock ends with the claim's transaction). Restores
--   no_stranded_row and one_live_owner through a transaction pooler: the lease is the row's (locked_by_id, locked_at), which every
--   server connection reads alike, and no session lock is left on a server connection another client then runs on.
-- Fix: lease=5m (was lease=session), with expire and age fixtures on locked_at, and state reading the lease from the row
--   (INPROGRESS while locked_by_id is set, lease_expired when locked_at is 5 minutes old) instead of from pg_locks. A job that runs
--   longer than 5 minutes would need a heartbeat that moves locked_at (a renew), not added here.
-- Fix: complete adds `locked_by_id = <claim's process> AND executions_count = @generation` to its save's WHERE (as the fixed :skiplocked
--   file does): restores fencing, strict_expiry (under policy=lenient: a stale save is refused once another claim has taken the job)
--   and terminal (finished rows have locked_by_id NULL). The advisory unlock after it is dropped (nothing to unlock).
-- Fix: retry's decision temp table gets the same guard plus FOR NO KEY UPDATE, and decides retried = executions_count < 2 (was
--   serialized executions + 1 < 2): restores fencing and terminal for retry, and attempt_budget (a claim whose worker died counts).
--   The advisory unlock after it is dropped.
-- Fix: the claim first discards (finished_at, error, error_event 4) every job whose lease expired on its last attempt
--   (executions_count >= 2), skipping rows other transactions lock, and its candidate CTE takes an expired lease only under the
--   budget (executions_count < 2): restores attempt_budget (an abandoned last attempt is DEAD by the next claim instead of claimed
--   a third time; without the second condition a row the discard skipped, locked for a moment by another statement, was
--   claimed a third time by the next statement: `check --concurrent`). good_job has no reaper for :advisory jobs to do this in.
-- Fix: the helper functions on pg_locks (the key, owns, locked, unlock) are dropped: nothing takes an advisory lock.
-- outboxlab: order=any
-- outboxlab: lease=5m
-- outboxlab: policy=lenient
-- outboxlab: max_attempts=2

-- name: schema
CREATE TABLE good_jobs (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    event_id text NOT NULL UNIQUE,
    queue_name text,
    priority integer,
    serialized_params jsonb,
    scheduled_at timestamp(6) without time zone,
    performed_at timestamp(6) without time zone,
    finished_at timestamp(6) without time zone,
    error text,
    created_at timestamp(6) without time zone NOT NULL,
    updated_at timestamp(6) without time zone NOT NULL,
    active_job_id uuid,
    executions_count integer,
    job_class text,
    error_event smallint,
    locked_by_id uuid,
    locked_at timestamp(6) without time zone,
    lock_type smallint
);

CREATE INDEX index_good_jobs_for_candidate_dequeue_unlocked
    ON good_jobs (priority ASC NULLS LAST, scheduled_at ASC, id ASC)
    WHERE finished_at IS NULL AND locked_by_id IS NULL;

CREATE INDEX index_good_jobs_on_locked_by_id
    ON good_jobs (locked_by_id) WHERE locked_by_id IS NOT NULL;

CREATE TABLE good_job_processes (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    created_at timestamp(6) without time zone NOT NULL,
    updated_at timestamp(6) without time zone NOT NULL,
    state jsonb,
    lock_type smallint
);

-- name: enqueue
WITH aj AS (SELECT gen_random_uuid() AS job_id)
INSERT INTO good_jobs (id, event_id, active_job_id, job_class, queue_name, priority, serialized_params,
                       created_at, scheduled_at, updated_at)
SELECT aj.job_id, @event_id, aj.job_id, 'OutboxlabJob', 'default', 0,
       jsonb_build_object('job_class', 'OutboxlabJob', 'job_id', aj.job_id, 'queue_name', 'default',
                          'priority', NULL, 'arguments', jsonb_build_array(@event_id::text),
                          'executions', 0, 'exception_executions', '{}'::jsonb),
       timezone('UTC', now()), timezone('UTC', now()), timezone('UTC', now())
FROM aj

-- name: claim
-- CapsuleTracker#id_for_lock: GoodJob::Process.find_or_create_record(id:) for this worker's process.
INSERT INTO good_job_processes (id, state, lock_type, created_at, updated_at)
VALUES (md5(concat(@worker::text, '/process'))::uuid,
        jsonb_build_object('hostname', 'outboxlab', 'proctitle', @worker::text), NULL,
        timezone('UTC', now()), timezone('UTC', now()))
ON CONFLICT (id) DO NOTHING;

-- Fix: discard every job whose lease expired on its last attempt (retry_on's 2 executions spent).
WITH exhausted AS (
    SELECT "good_jobs"."id" FROM "good_jobs"
    WHERE "good_jobs"."finished_at" IS NULL
      AND "good_jobs"."locked_by_id" IS NOT NULL
      AND "good_jobs"."locked_at" <= timezone('UTC', now()) - interval '5 minutes'
      AND "good_jobs"."executions_count" >= 2
    FOR NO KEY UPDATE SKIP LOCKED
)
UPDATE "good_jobs"
SET "locked_by_id" = NULL, "locked_at" = NULL, "lock_type" = NULL,
    "error" = 'GoodJob::InterruptedError: Interrupted after starting perform',
    "error_event" = 4,
    "finished_at" = timezone('UTC', now()), "updated_at" = timezone('UTC', now())
FROM exhausted
WHERE "good_jobs"."id" = exhausted.id;

-- Job.with_advisory_lock_claim -> advisory_lock over perform_with_advisory_lock's candidate scope.
-- Fix: a stored lease (locked_by_id NULL, or locked_at 5 minutes old) and a row lock (FOR NO KEY UPDATE
-- SKIP LOCKED) instead of the session's pg_try_advisory_lock.
CREATE TEMP TABLE good_job_claimed ON COMMIT DROP AS
SELECT "good_jobs".* FROM "good_jobs"
WHERE "good_jobs"."id" IN (
    WITH "rows" AS MATERIALIZED (
        SELECT "good_jobs"."id" FROM "good_jobs"
        WHERE "good_jobs"."finished_at" IS NULL
          AND "good_jobs"."scheduled_at" <= timezone('UTC', now())
          AND ("good_jobs"."locked_by_id" IS NULL
               OR ("good_jobs"."locked_at" <= timezone('UTC', now()) - interval '5 minutes'
                   AND "good_jobs"."executions_count" < 2))
        ORDER BY priority ASC NULLS LAST, "good_jobs"."created_at" ASC
        LIMIT 1
        FOR NO KEY UPDATE SKIP LOCKED
    )
    SELECT "rows"."id" FROM "rows"
    LIMIT 1
)
ORDER BY priority ASC NULLS LAST, "good_jobs"."created_at" ASC;

-- job.executable? (reload: finished_at blank), then Job#perform: an earlier performed_at marks the last
-- execution interrupted (error, error_event :interrupted), then update!(performed_at:, executions_count: + 1,
-- locked_by_id: lock_id, locked_at:, lock_type: :advisory).
CREATE TEMP TABLE good_job_performing ON COMMIT DROP AS
WITH started AS (
    UPDATE "good_jobs"
    SET "performed_at" = timezone('UTC', now()),
        "executions_count" = coalesce("executions_count", 0) + 1,
        "locked_by_id" = md5(concat(@worker::text, '/process'))::uuid,
        "locked_at" = timezone('UTC', now()),
        "lock_type" = 0,
        "error" = CASE WHEN "performed_at" IS NOT NULL
                       THEN 'GoodJob::InterruptedError: Interrupted after starting perform at ''' || "performed_at"::text || ''''
                       ELSE "error" END,
        "error_event" = CASE WHEN "performed_at" IS NOT NULL THEN 0 ELSE "error_event" END,
        "updated_at" = timezone('UTC', now())
    WHERE "good_jobs"."id" IN (SELECT id FROM good_job_claimed)
      AND "good_jobs"."finished_at" IS NULL
    RETURNING "good_jobs"."id", "good_jobs"."locked_by_id", "good_jobs"."event_id", "good_jobs"."executions_count"
)
SELECT * FROM started;

SELECT p.id::text || '/' || p.locked_by_id::text AS id,
       p.event_id,
       p.executions_count::bigint AS generation
FROM good_job_performing AS p;

-- name: complete
-- Job#perform's end: save! by id, fenced to the claim (Fix).
UPDATE "good_jobs"
SET "locked_by_id" = NULL, "locked_at" = NULL, "lock_type" = NULL,
    "error" = NULL, "error_event" = NULL,
    "finished_at" = timezone('UTC', now()), "updated_at" = timezone('UTC', now())
WHERE "good_jobs"."id" = split_part(@id::text, '/', 1)::uuid
  AND "good_jobs"."locked_by_id" = split_part(@id::text, '/', 2)::uuid
  AND "good_jobs"."executions_count" = @generation::int
RETURNING "good_jobs"."id";

-- name: retry
-- Active Job retry_on (attempts: 2): the decision, fenced to the claim and counting every claim (Fix).
CREATE TEMP TABLE active_job_retry ON COMMIT DROP AS
SELECT id, "executions_count" < 2 AS retried
FROM "good_jobs"
WHERE "good_jobs"."id" = split_part(@id::text, '/', 1)::uuid
  AND "good_jobs"."locked_by_id" = split_part(@id::text, '/', 2)::uuid
  AND "good_jobs"."executions_count" = @generation::int
FOR NO KEY UPDATE;

-- retry_job(wait: 1.minute) -> GoodJob::Job.enqueue on the running job's own row: save!.
UPDATE "good_jobs"
SET "serialized_params" = jsonb_set("serialized_params", '{executions}',
        to_jsonb(coalesce(("serialized_params" ->> 'executions')::int, 0) + 1)),
    "created_at" = timezone('UTC', now()),
    "scheduled_at" = timezone('UTC', now()) + interval '1 minute',
    "performed_at" = NULL, "finished_at" = NULL,
    "updated_at" = timezone('UTC', now())
WHERE "good_jobs"."id" = (SELECT id FROM active_job_retry WHERE retried);

-- Job#perform's end: save! with the lock cleared and the error; retried -> re-enqueued (performed_at and
-- finished_at NULL), retry stopped -> finished with the error (discarded).
UPDATE "good_jobs"
SET "locked_by_id" = NULL, "locked_at" = NULL, "lock_type" = NULL,
    "error" = 'StandardError: outboxlab retry',
    "error_event" = CASE WHEN r.retried THEN 3 ELSE 4 END,
    "performed_at" = CASE WHEN r.retried THEN NULL ELSE "good_jobs"."performed_at" END,
    "finished_at" = CASE WHEN r.retried THEN NULL ELSE timezone('UTC', now()) END,
    "updated_at" = timezone('UTC', now())
FROM active_job_retry AS r
WHERE "good_jobs"."id" = r.id
RETURNING "good_jobs"."id";

-- name: state
SELECT j.id, j.event_id,
       CASE WHEN j.finished_at IS NOT NULL AND j.error IS NULL THEN 'SENT'
            WHEN j.finished_at IS NOT NULL THEN 'DEAD'
            WHEN j.locked_by_id IS NOT NULL THEN 'INPROGRESS'
            ELSE 'READY' END AS status,
       coalesce(j.executions_count, 0)::bigint AS generation,
       CASE WHEN j.finished_at IS NULL AND j.locked_by_id IS NOT NULL
            THEN j.locked_at <= timezone('UTC', now()) - interval '5 minutes' END AS lease_expired,
       (j.finished_at IS NULL AND j.locked_by_id IS NULL AND j.scheduled_at <= timezone('UTC', now())) AS due
FROM good_jobs AS j
ORDER BY j.seq;

-- name: expire
UPDATE good_jobs SET locked_at = timezone('UTC', now()) - interval '5 minutes 1 second'
WHERE id = @id AND finished_at IS NULL AND locked_by_id IS NOT NULL;

-- name: due
UPDATE good_jobs SET scheduled_at = least(scheduled_at, timezone('UTC', now()) - interval '1 second')
WHERE id = @id AND finished_at IS NULL AND locked_by_id IS NULL;

-- name: age
UPDATE good_jobs SET locked_at = locked_at - make_interval(secs => @seconds)
WHERE id = @id AND finished_at IS NULL AND locked_by_id IS NOT NULL;
