-- Token variant (issue 23) of testdata/libraries/fixed/good_job.sql, for the
-- topologies that forget (docs/topologies.md, docs/libraries.md). What changed:
-- a uuid column of ours, good_jobs.fence_token, is stamped with
-- gen_random_uuid() by perform's start (the claim's third statement, which also
-- bumps executions_count) and returned as the generation; complete, retry's
-- decision row and renew's applied check compare it ("fence_token" =
-- @generation::uuid) where the fixed file compared "executions_count" =
-- @generation. The locked_by_id check stays. executions_count is still good_job's
-- counter and the attempt budget (retry_on's decision and Process.cleanup's
-- discard still read it). state returns fence_token as generation.
-- On a server that forgets an acknowledged commit (async-commit: a crash under
-- synchronous_commit=off; async-standby: a failover to a standby that was behind),
-- a counter fence comes back with the rewind: the next claim hands out the lost
-- claim's number again, and the lost claim's worker can finish the new claim.
-- A random token cannot be handed out twice, so the lost claim's outcome finds no
-- row to apply to. The library SQL below is the fixed file's, quoted as data;
-- only the lines named above differ, and its source note follows unchanged.
-- expect: single pass
-- expect: sync-standby pass
-- expect: async-commit pass
-- expect: async-standby pass
--
-- Fixed: good_job (testdata/libraries/good_job.sql) with complete fenced to its claim: perform's end save! also requires locked_by_id = the claim's process and executions_count = @generation. With retry fenced the same way: the retry_on decision row is read only while the claim still holds the job (same guard, FOR NO KEY UPDATE), so both of its saves apply only then. With retry_on's attempt count taken from executions_count (every claimed execution, interrupted ones too) instead of serialized_params' executions. With Process.cleanup discarding (finished_at, error, error_event retry_stopped) an exhausted job (executions_count >= 2) it unlocks instead of returning it to the queue. With renew (the heartbeat) reporting applied only while the job is still locked by the claim's process at @generation. With Process.cleanup locking the inactive processes it reads (FOR UPDATE), so a heartbeat between its read and its unlock of their jobs either keeps the process out of the cleanup or waits for it.
-- Library: good_job (Ruby on Rails Active Job backend on PostgreSQL: good_jobs table, lock_strategy :skiplocked)
-- Repository: https://github.com/bensheldon/good_job
-- Commit: 81db22b7cfde2579b2d735e076fa6eaacc65affa ("Release good_job v4.19.2")
-- Version: v4.19.2
-- Strategy: the pinned version has three lock strategies (GoodJob.configuration.lock_strategy: :advisory,
--   the default; :skiplocked; :hybrid). This file is the :skiplocked strategy (row claim with
--   FOR NO KEY UPDATE SKIP LOCKED, no advisory locks), not the advisory-lock query.
-- Sources:
--   app/models/good_job/job/lockable.rb: with_skip_locked_claim (the claim's CTE UPDATE, and its ensure)
--   app/models/good_job/job.rb: perform_with_skip_locked (the candidate scope: unfinished,
--     locked_by_id IS NULL, dequeueing_ordered, only_scheduled, exclude_paused, limit 1), perform
--     (perform start: update!(performed_at, executions_count + 1), interrupted-execution marking; perform
--     end: locked_by_id/locked_at/lock_type cleared, finished_at/error/error_event, save!),
--     Job.enqueue / enqueue_args (the re-enqueue an Active Job retry does on the running job's row)
--   app/models/good_job/process.rb: Process.cleanup (inactive processes: lock_type NULL and
--     updated_at older than EXPIRED_INTERVAL = 5 minutes; their jobs get locked_by_id/locked_at NULL and
--     the process row is deleted), refresh_if_stale / refresh (STALE_INTERVAL = 30 seconds)
--   lib/good_job/capsule_tracker.rb: id_for_lock (find_or_create_record), renew (the heartbeat)
--   app/models/concerns/good_job/error_events.rb: error_event values (interrupted 0, retried 3, retry_stopped 4)
--   lib/generators/good_job/templates/install/migrations/create_good_jobs.rb.erb: good_jobs and
--     good_job_processes tables
--   lib/good_job.rb: preserve_job_records default true, retry_on_unhandled_error default false
--   lib/good_job/configuration.rb: lock_strategy, advisory_lock_heartbeat (default: only in development),
--     dequeue_query_sort (default :created_at)
--
-- How good_job (:skiplocked) works: a process registers a good_job_processes row and heartbeats it
-- (updated_at) every 30 seconds. A performer thread claims one unfinished, unlocked, scheduled job with a
-- CTE UPDATE that sets locked_by_id to its process id, then, in a second transaction, stamps performed_at
-- and bumps executions_count and runs the Active Job. At the end it saves the row by id (ActiveRecord
-- save!): finished_at set and the lock columns cleared for success; for an Active Job retry (retry_on),
-- the job's own row is re-enqueued with a new scheduled_at and serialized executions + 1; once retry_on's
-- attempts are spent the error is re-raised and the row is finished with an error (discarded). None of
-- these writes checks locked_by_id. There is no per-job lease: a job is recovered only when its
-- process's heartbeat is older than 5 minutes, by Process.cleanup (run on a heartbeat and at notifier
-- start), which unlocks all of that process's jobs; a later claim then runs them again, marking the
-- earlier execution interrupted.
--
-- Adaptations:
--   - One good_job process per claim: good_job's liveness is per process (one heartbeat keeps all of a
--     process's jobs, one stale process releases them all), the suite's leases are per claim. The claim
--     registers a good_job_processes row of its own (id md5(concat(@worker, '/', txid_current()))::uuid, lock_type NULL as
--     with advisory_lock_heartbeat off), so the expire/age fixtures and the heartbeat act on one job.
--     The coupling of several jobs to one process is not exercised.
--   - claim: three statements in one transaction: id_for_lock's find_or_create_record (INSERT of the
--     process row), with_skip_locked_claim's CTE UPDATE as the strategy writes it (candidate SQL rendered
--     by hand from the ActiveRecord scope: queue '*', enable_pauses off so exclude_paused adds nothing,
--     dequeue_query_sort :created_at so ORDER BY priority ASC NULLS LAST, created_at ASC; lock_type = 1
--     for skiplocked), then perform's start (update!(performed_at, executions_count + 1), plus the
--     interrupted marking of error/error_event when performed_at was already set). In good_job the claim
--     and the perform start are two transactions; a crash between them leaves a locked job without
--     performed_at, which recovers the same way.
--   - The claim returns id = '<job id>/<process id>' (a per-claim handle: complete and retry use the job
--     id, renew the process id), event_id, and executions_count AS generation (bumped once per claimed
--     execution; good_job's outcomes do not check it).
--   - seq: an identity column added to good_jobs only for the state query's enqueue order (good_job's ids
--     are random uuids and a retry resets created_at).
--   - event_id: a text column added to good_jobs, set by enqueue (good_job's payload is serialized_params;
--     enqueue writes an Active Job-shaped serialized_params with executions 0 and arguments [event_id]).
--   - Tables trimmed to the columns the statements touch (batches, cron, concurrency, labels dropped);
--     good_job_executions, the per-execution history rows perform inserts and updates, left out (no
--     claim or recovery reads them). Rails datetime columns are timestamp without time zone in UTC:
--     Time.current is timezone('UTC', now()).
--   - complete: perform's end for a success, save! of the changed attributes (locked_by_id, locked_at,
--     lock_type, error, error_event, finished_at, updated_at) WHERE id; RETURNING id added. ActiveRecord
--     writes only attributes that differ from its in-memory copy; all of them are written here.
--   - retry: an Active Job `retry_on StandardError, attempts: 2, wait: 1.minute`. Active Job decides
--     from its in-memory `executions` (serialized_params executions + 1; read from the row here). While
--     executions < 2: Job.enqueue's save! on the running row (serialized executions + 1, created_at and
--     scheduled_at = now + 1 minute, performed_at/finished_at NULL), then perform's end save! (locks
--     cleared, error, error_event retried). At 2: retry_on re-raises, perform's end saves finished_at with
--     the error (error_event retry_stopped): discarded. The decision is kept in a temp table; RETURNING id
--     added. Active Job's default is attempts: 5, wait: 3.seconds (a 3-second backoff could end by the wall
--     clock inside a check; 1 minute is a retry_on argument a user may choose).
--   - max_attempts=2: retry_on's attempts, chosen small (Active Job's default is 5) so that counterexamples
--     stay short: the budget is spent in two claims. Active Job counts only executions that reached a
--     retry; an execution whose process died is counted by executions_count but not by retry_on, and
--     Process.cleanup makes no job discarded, so abandoned claims are not bounded (this is what the suite
--     will show).
--   - lease=4m30s: a process is inactive after 5 minutes without a heartbeat, but the heartbeat only
--     writes when the row is stale (older than 30 seconds), so the lease good_job guarantees after a
--     heartbeat is 5 minutes less 30 seconds. lease_expired: the claim's process updated_at older than
--     5 minutes, Process.inactive's own test.
--   - renew: CapsuleTracker#renew -> refresh_if_stale: nothing when the process row is fresh, else
--     refresh (reload and update updated_at; a deleted row is saved again as new), as one upsert; the
--     heartbeat never reports failure, so it returns applied = true. The Process.cleanup that renew runs
--     after refreshing (cleanup: true) is the rescue section, not repeated here.
--   - rescue: Process.cleanup, the inactive scope's lock_type NULL branch (the advisory branch needs the
--     process's session advisory lock, off by default outside development), its per-process
--     update_all and delete run as two set statements in one transaction.
--   - policy=lenient: a job whose process went stale can still be saved by its performer until cleanup
--     or another claim has taken it (good_job's writes are by id alone).
--   - order=any: a retried job's created_at is reset to the retry time, so it goes behind jobs enqueued
--     after it.
--   - States: finished_at NULL and locked_by_id NULL -> READY (due: scheduled_at <= now); finished_at NULL
--     and locked_by_id set -> INPROGRESS; finished_at set and error NULL -> SENT (succeeded); finished_at
--     set and error set -> DEAD (discarded). done=keep: preserve_job_records defaults to true.
-- Fix: complete adds `locked_by_id = <claim's process> AND executions_count = @generation` to its WHERE: restores fencing (a stale or
--   duplicate save no longer finishes a job that was retried, unlocked by cleanup or claimed again) and terminal (a second complete or a
--   retry no longer rewrites a finished row: finished rows have locked_by_id NULL). The lock owner alone is not a per-claim fence in
--   good_job (one process holds many jobs and may claim the same job again), hence executions_count too.
-- Fix: retry's decision temp table gets the same guard plus FOR NO KEY UPDATE; its two UPDATEs key off that table, so a refused retry
--   writes nothing: restores fencing and terminal for retry.
-- Fix: retry decides retried = executions_count < 2 (was serialized executions + 1 < 2, which counts only executions that reached a
--   retry_on): restores attempt_budget (claims whose process died count against the budget, so the retry of the 2nd claim discards).
-- Fix: rescue (Process.cleanup) sets finished_at, error and error_event 4 on an unlocked job with executions_count >= 2: restores
--   attempt_budget (an abandoned last attempt is DEAD after the next rescue instead of READY for a 3rd claim).
-- Fix: renew returns applied = EXISTS(job still locked by the claim's process at @generation) instead of true: restores fencing and
--   terminal for renew (a heartbeat of a rescued, reclaimed or finished claim is reported refused).
-- Fix: rescue (Process.cleanup) reads its inactive processes FOR UPDATE: restores one_live_owner and fencing under concurrency
--   (issue 27). Cleanup reads the inactive processes in one statement and unlocks their jobs by locked_by_id in the next; a heartbeat
--   (renew) that committed between the two made the process live again, reported applied, and its job was unlocked anyway and
--   claimed by another worker (or discarded). With the lock, a heartbeat that comes first makes the read skip the process
--   (PostgreSQL re-checks updated_at on the locked row version), and one that comes later waits for the cleanup's commit and then
--   finds its job unlocked (renew's EXISTS, a statement of its own, sees it and reports refused). Found by `outboxlab check
--   --concurrent` (not linearizable: a Renew applied while a Rescue ran, the row released afterwards; 4 runs of 5).
-- outboxlab: fence=token
-- outboxlab: order=any
-- outboxlab: lease=4m30s
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
    fence_token uuid,
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
-- CapsuleTracker#id_for_lock: GoodJob::Process.find_or_create_record(id:) for this claim's process.
INSERT INTO good_job_processes (id, state, lock_type, created_at, updated_at)
VALUES (md5(concat(@worker::text, '/', txid_current()))::uuid,
        jsonb_build_object('hostname', 'outboxlab', 'proctitle', @worker::text), NULL,
        timezone('UTC', now()), timezone('UTC', now()))
ON CONFLICT (id) DO NOTHING;

-- Job.with_skip_locked_claim(locked_by_id: lock_id, locked_at: Time.current, lock_type: :skiplocked)
-- over perform_with_skip_locked's candidate scope.
WITH candidate AS MATERIALIZED (
    SELECT "good_jobs"."id" FROM "good_jobs"
    WHERE "good_jobs"."finished_at" IS NULL
      AND "good_jobs"."locked_by_id" IS NULL
      AND "good_jobs"."scheduled_at" <= timezone('UTC', now())
    ORDER BY priority ASC NULLS LAST, "good_jobs"."created_at" ASC
    LIMIT 1
    FOR NO KEY UPDATE SKIP LOCKED
)
UPDATE "good_jobs"
SET locked_by_id = md5(concat(@worker::text, '/', txid_current()))::uuid,
    locked_at = timezone('UTC', now()),
    lock_type = 1
FROM candidate
WHERE "good_jobs".id = candidate.id
RETURNING "good_jobs".*;

-- Job#perform (already_claimed: true): an earlier performed_at marks the last execution interrupted
-- (error, error_event :interrupted), then update!(performed_at:, executions_count: + 1).
UPDATE "good_jobs"
SET "performed_at" = timezone('UTC', now()),
    "executions_count" = coalesce("executions_count", 0) + 1,
    "fence_token" = gen_random_uuid(),
    "error" = CASE WHEN "performed_at" IS NOT NULL
                   THEN 'GoodJob::InterruptedError: Interrupted after starting perform at ''' || "performed_at"::text || ''''
                   ELSE "error" END,
    "error_event" = CASE WHEN "performed_at" IS NOT NULL THEN 0 ELSE "error_event" END,
    "updated_at" = timezone('UTC', now())
WHERE "good_jobs"."locked_by_id" = md5(concat(@worker::text, '/', txid_current()))::uuid
  AND "good_jobs"."finished_at" IS NULL
RETURNING "good_jobs"."id"::text || '/' || "good_jobs"."locked_by_id"::text AS id,
          "good_jobs"."event_id",
          "good_jobs"."fence_token" AS generation;

-- name: complete
UPDATE "good_jobs"
SET "locked_by_id" = NULL, "locked_at" = NULL, "lock_type" = NULL,
    "error" = NULL, "error_event" = NULL,
    "finished_at" = timezone('UTC', now()), "updated_at" = timezone('UTC', now())
WHERE "good_jobs"."id" = split_part(@id::text, '/', 1)::uuid
  AND "good_jobs"."locked_by_id" = split_part(@id::text, '/', 2)::uuid
  AND "good_jobs"."fence_token" = @generation::uuid
RETURNING "good_jobs"."id";

-- name: retry
-- Active Job retry_on (attempts: 2): the in-memory executions count this execution decides with.
CREATE TEMP TABLE active_job_retry ON COMMIT DROP AS
SELECT id, "executions_count" < 2 AS retried
FROM "good_jobs"
WHERE "good_jobs"."id" = split_part(@id::text, '/', 1)::uuid
  AND "good_jobs"."locked_by_id" = split_part(@id::text, '/', 2)::uuid
  AND "good_jobs"."fence_token" = @generation::uuid
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

-- name: renew
-- CapsuleTracker#renew -> Process#refresh_if_stale: refresh only a stale (30 s) record; refresh
-- re-creates a deleted one.
INSERT INTO good_job_processes (id, state, lock_type, created_at, updated_at)
SELECT handle.process_id,
       jsonb_build_object('hostname', 'outboxlab', 'proctitle', @worker::text), NULL,
       timezone('UTC', now()), timezone('UTC', now())
FROM (SELECT split_part(@id::text, '/', 2)::uuid AS process_id) AS handle
WHERE handle.process_id IS NOT NULL
ON CONFLICT (id) DO UPDATE
SET state = EXCLUDED.state, updated_at = timezone('UTC', now())
WHERE good_job_processes.updated_at < timezone('UTC', now()) - interval '30 seconds';

SELECT EXISTS (
    SELECT 1 FROM "good_jobs"
    WHERE "good_jobs"."id" = split_part(@id::text, '/', 1)::uuid
      AND "good_jobs"."locked_by_id" = split_part(@id::text, '/', 2)::uuid
      AND "good_jobs"."fence_token" = @generation::uuid
) AS applied;

-- name: rescue
-- GoodJob::Process.cleanup: inactive.find_each { unlock its jobs; delete it }.
CREATE TEMP TABLE inactive_processes ON COMMIT DROP AS
SELECT "good_job_processes"."id" FROM "good_job_processes"
WHERE "good_job_processes"."lock_type" IS NULL
  AND "good_job_processes"."updated_at" < timezone('UTC', now()) - interval '5 minutes'
FOR UPDATE;

UPDATE "good_jobs" SET "locked_by_id" = NULL, "locked_at" = NULL,
    "error" = CASE WHEN "executions_count" >= 2
                   THEN 'GoodJob::InterruptedError: Interrupted after starting perform' ELSE "error" END,
    "error_event" = CASE WHEN "executions_count" >= 2 THEN 4 ELSE "error_event" END,
    "finished_at" = CASE WHEN "executions_count" >= 2 THEN timezone('UTC', now()) ELSE "finished_at" END
WHERE "good_jobs"."locked_by_id" IN (SELECT id FROM inactive_processes);

DELETE FROM "good_job_processes"
WHERE "good_job_processes"."id" IN (SELECT id FROM inactive_processes);

-- name: state
SELECT j.id, j.event_id,
       CASE WHEN j.finished_at IS NOT NULL AND j.error IS NULL THEN 'SENT'
            WHEN j.finished_at IS NOT NULL THEN 'DEAD'
            WHEN j.locked_by_id IS NOT NULL THEN 'INPROGRESS'
            ELSE 'READY' END AS status,
       j.fence_token AS generation,
       CASE WHEN j.finished_at IS NULL AND j.locked_by_id IS NOT NULL
            THEN coalesce(p.updated_at < timezone('UTC', now()) - interval '5 minutes', true) END AS lease_expired,
       (j.finished_at IS NULL AND j.locked_by_id IS NULL AND j.scheduled_at <= timezone('UTC', now())) AS due
FROM good_jobs AS j
LEFT JOIN good_job_processes AS p ON p.id = j.locked_by_id
ORDER BY j.seq;

-- name: expire
UPDATE good_job_processes
SET updated_at = timezone('UTC', now()) - interval '5 minutes 1 second'
WHERE id = (SELECT locked_by_id FROM good_jobs WHERE id = @id AND finished_at IS NULL);

-- name: due
UPDATE good_jobs SET scheduled_at = least(scheduled_at, timezone('UTC', now()) - interval '1 second')
WHERE id = @id AND finished_at IS NULL AND locked_by_id IS NULL;

-- name: age
UPDATE good_job_processes
SET updated_at = updated_at - make_interval(secs => @seconds)
WHERE id = (SELECT locked_by_id FROM good_jobs WHERE id = @id AND finished_at IS NULL);
