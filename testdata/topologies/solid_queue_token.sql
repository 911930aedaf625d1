-- Token variant (issue 23) of testdata/libraries/fixed/solid_queue.sql, for the
-- topologies that forget (docs/topologies.md, docs/libraries.md). What changed:
-- Solid Queue's claim returns no generation: the fixed file fences
-- on the claimed execution's id (a bigserial, in the claim's handle
-- id:process_id:job_id), which a rewind can hand out again together with the
-- process id (sequence values whose WAL was lost are reissued), so a lost
-- claim's handle can name the new claim. Here a uuid column of ours,
-- solid_queue_claimed_executions.fence_token, is filled with gen_random_uuid()
-- by the claim's INSERT and returned as the generation; the finalizing lock of
-- complete and retry, the heartbeat and its applied check also compare it
-- (fence_token = @generation::uuid). The heartbeat needs it as much as the
-- outcomes: a lost claim's process id, handed out again to a later claim's
-- process, would let the lost claim's worker keep the new claim's process
-- alive, a refused renew that changed the claim's lease. The attempt budget is still Active Job's
-- executions in the job's arguments. state returns the claimed execution's
-- fence_token as generation (NULL while no execution is claimed).
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
-- Fixed: solid_queue (testdata/libraries/solid_queue.sql) with three changes: retry locks its claimed execution first (unless_already_finalized moved ahead of the re-enqueue) and re-enqueues the job only while that claimed execution still exists. The prune fails (ProcessPrunedError) only a pruned claim whose run was its last attempt (executions + 1 >= 2) and retries the others as retry_on would: a new job with executions + 1, ready at once, the pruned job finished. The order directive is any, not fifo, since every retry is a new job row that queues behind later events (a directive mapping bug of the original file, not library SQL).
-- Library: Solid Queue (Rails' database-backed Active Job backend: a jobs table plus one table per execution state)
-- Repository: https://github.com/rails/solid_queue
-- Commit: 29e818d9c1181195736ffc5d7c1d1c03757b7752 (2026-07-24; git describe: v1.5.0-3-g29e818d, 3 commits after tag v1.5.0)
-- Source files:
--   lib/generators/solid_queue/install/templates/db/queue_schema.rb: tables solid_queue_jobs,
--     solid_queue_ready_executions, solid_queue_scheduled_executions,
--     solid_queue_claimed_executions, solid_queue_failed_executions, solid_queue_processes
--     and their indexes and foreign keys
--   app/models/solid_queue/job.rb: Job.enqueue / attributes_from_active_job (enqueue, and the
--     re-enqueue of an Active Job retry); app/models/solid_queue/job/executable.rb:
--     prepare_for_execution, dispatch, ready (ReadyExecution.create_or_find_by!), finished!
--     (touch finished_at, preserve_finished_jobs=true by default);
--     app/models/solid_queue/job/schedulable.rb: schedule (ScheduledExecution);
--     app/models/solid_queue/job/retryable.rb: failed_with (FailedExecution.create!)
--   app/models/solid_queue/ready_execution.rb: ReadyExecution.claim, select_and_lock,
--     select_candidates (ordered.limit(n) FOR UPDATE SKIP LOCKED), lock_candidates
--   app/models/solid_queue/claimed_execution.rb: ClaimedExecution.claiming (insert_all!, load,
--     then delete the ready executions), perform, finished, failed_with, finalize,
--     unless_already_finalized (lock.find_by(id) in a transaction), fail_all_with
--   app/models/solid_queue/execution.rb: scope ordered (priority asc, job_id asc)
--   app/models/solid_queue/scheduled_execution.rb + execution/dispatching.rb: dispatch_next_batch
--     (the dispatcher's promotion of due scheduled executions; the `due` fixture)
--   app/models/solid_queue/process.rb, process/prunable.rb, process/executor.rb:
--     Process.register, heartbeat (with_lock { touch(:last_heartbeat_at) }), prune
--     (prunable = last_heartbeat_at <= process_alive_threshold.ago, FOR UPDATE SKIP LOCKED,
--     fail_all_claimed_executions_with(ProcessPrunedError), deregister)
--   lib/solid_queue/supervisor/maintenance.rb: prune_dead_processes every
--     process_alive_threshold (the rescue); lib/solid_queue.rb: process_heartbeat_interval=60s,
--     process_alive_threshold=5 minutes; lib/solid_queue/configuration.rb: WORKER_DEFAULTS
--     (queues "*", threads 3); lib/solid_queue/worker.rb: claim_executions (limit = idle threads)
--   lib/active_job/queue_adapters/solid_queue_adapter.rb: enqueue / enqueue_at
--
-- How Solid Queue works: a job's state is which execution table holds it. Enqueue inserts
-- the job and a ready execution (or a scheduled one, which the dispatcher later moves to
-- ready). A worker claims in one transaction: it selects ready executions in priority/job
-- order FOR UPDATE SKIP LOCKED, inserts claimed executions carrying its process id, and
-- deletes the ready ones. When the job ends, finalize locks the worker's claimed execution by
-- id and, only if it still exists, marks the job finished (or creates a failed execution)
-- and deletes the claimed execution: the claimed execution's id is a per-claim token, so a
-- worker whose claim was taken away cannot finalize. Workers heartbeat their process row
-- every 60 seconds; the supervisor prunes processes silent for 5 minutes and FAILS their
-- claimed executions (ProcessPrunedError): a crashed worker's job goes to
-- failed_executions, to be retried by hand, not back to ready. Retries with backoff are
-- Active Job's retry_on: inside perform it enqueues a new job row (same active_job_id,
-- scheduled_at in the future) and perform then returns normally, so the claim finalizes as
-- finished; once retry_on's attempts are spent the error propagates and the claim fails.
--
-- Adaptations:
--   - Schema trimmed to the six tables these statements touch (blocked executions,
--     semaphores, pauses, recurring tables left out, with the concurrency-control paths);
--     Rails "datetime" is timestamp(6) without time zone holding UTC, written here as
--     timezone('UTC', now()); string is character varying; the processes table keeps
--     kind, last_heartbeat_at, pid, hostname, name, created_at.
--   - event_id: used as the Active Job job_id, i.e. solid_queue_jobs.active_job_id, which an
--     Active Job retry keeps on the re-enqueued job. class_name 'OutboxRelayJob', queue
--     'default', priority 0; arguments is the JSON Active Job serializes, reduced to
--     job_class, job_id, arguments [event_id] and executions.
--   - One event may span several job rows (each retry enqueues a new one): state shows, per
--     active_job_id, every job row still to run (not finished, not failed), or else the newest,
--     in order of the first. Two rows still to run are the event queued twice (a stale or
--     duplicate retry re-enqueues unconditionally), which the suite reports as "event ids are
--     unique: eN appears twice": two workers may then run the event at once.
--   - Each claim registers a process of its own (Process.register, kind 'Worker', name
--     '@worker-<uuid>'), as a worker of one claim per boot; the suite's expire/age act on one
--     event, and heartbeats and pruning are per process, so this is what lets a fixture stall
--     exactly one claim. The claim's id is the handle 'claimed_execution_id:process_id:job_id'
--     (the worker knows all three: its claimed execution, its process, its job).
--   - claim: a worker with threads: 1 (the default is 3), so it claims one execution at a time
--     (limit = idle threads). Liveness is per process, so all executions of a batch claim
--     stall together; the suite's fixtures stall one event at a time, so a batch of 3 under
--     one process makes `age` of one event age its batch-mates too (the suite reports "age
--     changed another event's row"): an artifact of the fixture model, not a finding, hence
--     batch=1. The statements: select_candidates,
--     claiming's INSERT, the ready-execution DELETE, then claiming's SELECT of the claimed
--     executions (moved last, after the DELETE, so it is the section's result; same
--     transaction). insert_all! would raise on a duplicate job_id; the suite sees that as an
--     error. queues "*" with no paused queue: no queue filter.
--   - complete: finalize { job.finished! }: lock the claimed execution by id, touch
--     finished_at, delete it; RETURNING added to the DELETE (no row = already finalized).
--     preserve_finished_jobs=true (default): the job stays, SENT, done=keep.
--   - retry: Active Job `retry_on StandardError, wait: 60.seconds, attempts: 2` (Active Job's
--     default attempts is 5; Solid Queue itself has none). Active Job's executions counter is
--     read from the job row's serialized arguments (executions k before this run: retry when
--     k + 1 < 2). Retry branch: enqueue_at inserts the new job and its scheduled execution
--     (unconditionally, as retry_on does, whether or not this claim is still current), then
--     finalize { job.finished! }. Exhausted branch: finalize { job.failed_with(error) }.
--     In Rails the re-enqueue and the finalize are separate transactions; here one.
--     Result: one row, applied = a new job was enqueued or the claim was finalized as failed.
--   - max_attempts=2 is retry_on's attempts: 2, chosen small so that counterexamples stay short
--     (the budget is spent in two claims).
--   - renew: Process#heartbeat (SELECT ... FOR UPDATE, then touch last_heartbeat_at) for the
--     claim's own process. A heartbeat is per process, not per job: applied = the heartbeat
--     updated a process that still holds this claimed execution (observed, no guard added).
--   - lease=5m: process_alive_threshold (heartbeats every 60 s).
--   - rescue: the supervisor's prune_dead_processes in one transaction: lock the prunable
--     processes (FOR UPDATE SKIP LOCKED), lock their claimed executions (find_by ... lock,
--     blocking), insert failed executions with a ProcessPrunedError (ON CONFLICT (job_id) DO
--     UPDATE stands for failed_with's RecordNotUnique rescue), delete the claimed executions,
--     delete the processes (deregister; its after_destroy release_all finds no claimed
--     execution left). In Rails, find_in_batches runs outside a transaction and each failed_with
--     is its own transaction. unblock_next_blocked_job (concurrency controls) is left out.
--   - policy=lenient: nothing expires a claim but pruning; a silent worker may still finalize
--     until the supervisor prunes it, which is Solid Queue's own promise.
--   - States: failed execution -> DEAD, finished_at set -> SENT, claimed execution ->
--     INPROGRESS, ready or scheduled execution -> READY (due: ready, or scheduled_at passed).
--     lease_expired, for a claimed one, is the prune's own test: process gone or
--     last_heartbeat_at older than 5 minutes. expire/age move the claiming process's
--     last_heartbeat_at back. due: the dispatcher's dispatch_next_batch for that job (delete the
--     scheduled execution, create the ready one), as if its time had come.
-- Fix: (1) retry: the finalizing lock moves before the re-enqueue and `running` adds AND j.id IN (SELECT job_id FROM finalizing):
--   restores fencing (a stale or pruned owner's retry no longer enqueues a new job for its event) and terminal (a retry after the
--   complete, or a duplicate retry, no longer re-opens a SENT event or enqueues a second job).
-- Fix: (2) rescue: the failed-execution INSERT only for executions + 1 >= 2; for the others a new job (arguments.executions + 1)
--   with a ready execution, and the pruned job marked finished, as a retry_on retry leaves it: restores attempt_budget (no event is
--   DEAD before its 2 attempts; an abandoned run counts as one, through Active Job's executions counter).
-- Fix: (3) order=any instead of order=fifo: Solid Queue claims in (priority, job_id) order and a retry (the library's own retry_on,
--   and now the prune's) enqueues a new job row, so a retried event queues behind events enqueued after it; fifo by event was never
--   Solid Queue's promise (mapping bug in the original file; with fifo the fixed file still breaks order, see the final report).
-- outboxlab: fence=token
-- outboxlab: order=any
-- outboxlab: lease=5m
-- outboxlab: max_attempts=2
-- outboxlab: policy=lenient

-- name: schema
CREATE TABLE solid_queue_jobs (
    id bigserial PRIMARY KEY,
    queue_name character varying NOT NULL,
    class_name character varying NOT NULL,
    arguments text,
    priority integer DEFAULT 0 NOT NULL,
    active_job_id character varying,
    scheduled_at timestamp(6) without time zone,
    finished_at timestamp(6) without time zone,
    concurrency_key character varying,
    created_at timestamp(6) without time zone NOT NULL,
    updated_at timestamp(6) without time zone NOT NULL
);
CREATE INDEX index_solid_queue_jobs_on_active_job_id ON solid_queue_jobs (active_job_id);
CREATE INDEX index_solid_queue_jobs_on_class_name ON solid_queue_jobs (class_name);
CREATE INDEX index_solid_queue_jobs_on_finished_at ON solid_queue_jobs (finished_at);
CREATE INDEX index_solid_queue_jobs_for_filtering ON solid_queue_jobs (queue_name, finished_at);
CREATE INDEX index_solid_queue_jobs_for_alerting ON solid_queue_jobs (scheduled_at, finished_at);

CREATE TABLE solid_queue_ready_executions (
    id bigserial PRIMARY KEY,
    job_id bigint NOT NULL REFERENCES solid_queue_jobs (id) ON DELETE CASCADE,
    queue_name character varying NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    created_at timestamp(6) without time zone NOT NULL
);
CREATE UNIQUE INDEX index_solid_queue_ready_executions_on_job_id ON solid_queue_ready_executions (job_id);
CREATE INDEX index_solid_queue_poll_all ON solid_queue_ready_executions (priority, job_id);
CREATE INDEX index_solid_queue_poll_by_queue ON solid_queue_ready_executions (queue_name, priority, job_id);

CREATE TABLE solid_queue_scheduled_executions (
    id bigserial PRIMARY KEY,
    job_id bigint NOT NULL REFERENCES solid_queue_jobs (id) ON DELETE CASCADE,
    queue_name character varying NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    scheduled_at timestamp(6) without time zone NOT NULL,
    created_at timestamp(6) without time zone NOT NULL
);
CREATE UNIQUE INDEX index_solid_queue_scheduled_executions_on_job_id ON solid_queue_scheduled_executions (job_id);
CREATE INDEX index_solid_queue_dispatch_all ON solid_queue_scheduled_executions (scheduled_at, priority, job_id);

CREATE TABLE solid_queue_claimed_executions (
    id bigserial PRIMARY KEY,
    job_id bigint NOT NULL REFERENCES solid_queue_jobs (id) ON DELETE CASCADE,
    process_id bigint,
    created_at timestamp(6) without time zone NOT NULL,
    fence_token uuid
);
CREATE UNIQUE INDEX index_solid_queue_claimed_executions_on_job_id ON solid_queue_claimed_executions (job_id);
CREATE INDEX index_solid_queue_claimed_executions_on_process_id_and_job_id ON solid_queue_claimed_executions (process_id, job_id);

CREATE TABLE solid_queue_failed_executions (
    id bigserial PRIMARY KEY,
    job_id bigint NOT NULL REFERENCES solid_queue_jobs (id) ON DELETE CASCADE,
    error text,
    created_at timestamp(6) without time zone NOT NULL
);
CREATE UNIQUE INDEX index_solid_queue_failed_executions_on_job_id ON solid_queue_failed_executions (job_id);

CREATE TABLE solid_queue_processes (
    id bigserial PRIMARY KEY,
    kind character varying NOT NULL,
    last_heartbeat_at timestamp(6) without time zone NOT NULL,
    supervisor_id bigint,
    pid integer NOT NULL,
    hostname character varying,
    metadata text,
    created_at timestamp(6) without time zone NOT NULL,
    name character varying NOT NULL
);
CREATE INDEX index_solid_queue_processes_on_last_heartbeat_at ON solid_queue_processes (last_heartbeat_at);
CREATE UNIQUE INDEX index_solid_queue_processes_on_name_and_supervisor_id ON solid_queue_processes (name, supervisor_id);
CREATE INDEX index_solid_queue_processes_on_supervisor_id ON solid_queue_processes (supervisor_id);

-- name: enqueue
WITH job AS (
    INSERT INTO solid_queue_jobs (queue_name, class_name, arguments, priority, active_job_id,
                                  scheduled_at, concurrency_key, created_at, updated_at)
    VALUES ('default', 'OutboxRelayJob',
            json_build_object('job_class', 'OutboxRelayJob', 'job_id', @event_id::text,
                              'arguments', json_build_array(@event_id::text), 'executions', 0)::text,
            0, @event_id::text, timezone('UTC', now()), NULL,
            timezone('UTC', now()), timezone('UTC', now()))
    RETURNING id, queue_name, priority
)
INSERT INTO solid_queue_ready_executions (job_id, queue_name, priority, created_at)
SELECT id, queue_name, priority, timezone('UTC', now()) FROM job

-- name: claim
CREATE TEMP TABLE registered_process ON COMMIT DROP AS
WITH p AS (
    INSERT INTO solid_queue_processes (kind, last_heartbeat_at, pid, hostname, name, created_at, metadata)
    VALUES ('Worker', timezone('UTC', now()), pg_backend_pid(), 'outboxlab',
            coalesce(@worker::text, 'worker') || '-' || gen_random_uuid()::text, timezone('UTC', now()),
            '{"queues":"*","thread_pool_size":1}')
    RETURNING id
)
SELECT id FROM p;

CREATE TEMP TABLE candidates ON COMMIT DROP AS
SELECT "solid_queue_ready_executions"."id", "solid_queue_ready_executions"."job_id"
FROM "solid_queue_ready_executions"
ORDER BY "solid_queue_ready_executions"."priority" ASC, "solid_queue_ready_executions"."job_id" ASC
LIMIT 1
FOR UPDATE SKIP LOCKED;

INSERT INTO "solid_queue_claimed_executions" ("job_id", "process_id", "created_at", "fence_token")
SELECT c.job_id, p.id, timezone('UTC', now()), gen_random_uuid()
FROM candidates AS c, registered_process AS p
ORDER BY c.job_id;

DELETE FROM "solid_queue_ready_executions"
WHERE "solid_queue_ready_executions"."id" IN (SELECT id FROM candidates);

SELECT ce.id::text || ':' || ce.process_id::text || ':' || ce.job_id::text AS id,
       j.active_job_id::text AS event_id, ce.fence_token AS generation
FROM "solid_queue_claimed_executions" AS ce
JOIN registered_process AS p ON ce.process_id = p.id
JOIN solid_queue_jobs AS j ON j.id = ce.job_id
WHERE ce.job_id IN (SELECT job_id FROM candidates)
ORDER BY ce.job_id;

-- name: complete
CREATE TEMP TABLE finalizing ON COMMIT DROP AS
SELECT "solid_queue_claimed_executions".* FROM "solid_queue_claimed_executions"
WHERE "solid_queue_claimed_executions"."id" = split_part(@id::text, ':', 1)::bigint
  AND "solid_queue_claimed_executions"."fence_token" = @generation::uuid
LIMIT 1 FOR UPDATE;

UPDATE "solid_queue_jobs"
SET "finished_at" = timezone('UTC', now()), "updated_at" = timezone('UTC', now())
WHERE "solid_queue_jobs"."id" IN (SELECT job_id FROM finalizing);

DELETE FROM "solid_queue_claimed_executions"
WHERE "solid_queue_claimed_executions"."id" IN (SELECT id FROM finalizing)
RETURNING id;

-- name: retry
-- finalize: unless_already_finalized
CREATE TEMP TABLE finalizing ON COMMIT DROP AS
SELECT "solid_queue_claimed_executions".* FROM "solid_queue_claimed_executions"
WHERE "solid_queue_claimed_executions"."id" = split_part(@id::text, ':', 1)::bigint
  AND "solid_queue_claimed_executions"."fence_token" = @generation::uuid
LIMIT 1 FOR UPDATE;

-- perform: retry_on decides on Active Job's executions; enqueue_at re-enqueues the job
CREATE TEMP TABLE reenqueued ON COMMIT DROP AS
WITH running AS (
    SELECT j.*, (j.arguments::jsonb->>'executions')::int + 1 AS executions
    FROM solid_queue_jobs AS j
    WHERE j.id = split_part(@id::text, ':', 3)::bigint
      AND j.id IN (SELECT job_id FROM finalizing)
), new_job AS (
    INSERT INTO solid_queue_jobs (queue_name, class_name, arguments, priority, active_job_id,
                                  scheduled_at, concurrency_key, created_at, updated_at)
    SELECT queue_name, class_name,
           jsonb_set(arguments::jsonb, '{executions}', to_jsonb(executions))::text,
           priority, active_job_id, timezone('UTC', now()) + interval '60 seconds',
           concurrency_key, timezone('UTC', now()), timezone('UTC', now())
    FROM running
    WHERE executions < 2
    RETURNING id, queue_name, priority, scheduled_at
), scheduled AS (
    INSERT INTO solid_queue_scheduled_executions (job_id, queue_name, priority, scheduled_at, created_at)
    SELECT id, queue_name, priority, scheduled_at, timezone('UTC', now()) FROM new_job
    RETURNING job_id
)
SELECT job_id FROM scheduled;

-- retried: perform returned normally, so finished
UPDATE "solid_queue_jobs"
SET "finished_at" = timezone('UTC', now()), "updated_at" = timezone('UTC', now())
WHERE "solid_queue_jobs"."id" IN (SELECT job_id FROM finalizing)
  AND (arguments::jsonb->>'executions')::int + 1 < 2;

-- exhausted: the error propagates, failed_with
CREATE TEMP TABLE failed_now ON COMMIT DROP AS
WITH f AS (
    INSERT INTO solid_queue_failed_executions (job_id, error, created_at)
    SELECT f.job_id,
           '{"exception_class":"OutboxRelayError","message":"retry requested","backtrace":[]}',
           timezone('UTC', now())
    FROM finalizing AS f
    JOIN solid_queue_jobs AS j ON j.id = f.job_id
    WHERE (j.arguments::jsonb->>'executions')::int + 1 >= 2
    ON CONFLICT (job_id) DO UPDATE SET error = EXCLUDED.error
    RETURNING job_id
)
SELECT job_id FROM f;

DELETE FROM "solid_queue_claimed_executions"
WHERE "solid_queue_claimed_executions"."id" IN (SELECT id FROM finalizing);

SELECT EXISTS (SELECT 1 FROM reenqueued) OR EXISTS (SELECT 1 FROM failed_now) AS applied;

-- name: renew
WITH locked AS (
    SELECT id FROM solid_queue_processes
    WHERE id = split_part(@id::text, ':', 2)::bigint
    LIMIT 1 FOR UPDATE
), heartbeat AS (
    UPDATE solid_queue_processes AS p
    SET last_heartbeat_at = timezone('UTC', now())
    FROM locked
    WHERE p.id = locked.id
      AND EXISTS (
        SELECT 1 FROM solid_queue_claimed_executions AS ce
        WHERE ce.process_id = p.id
          AND ce.id = split_part(@id::text, ':', 1)::bigint
          AND ce.fence_token = @generation::uuid
      )
    RETURNING p.id
)
SELECT EXISTS (
    SELECT 1 FROM heartbeat AS h
    JOIN solid_queue_claimed_executions AS ce ON ce.process_id = h.id
    WHERE ce.id = split_part(@id::text, ':', 1)::bigint
      AND ce.fence_token = @generation::uuid
) AS applied

-- name: rescue
CREATE TEMP TABLE prunable ON COMMIT DROP AS
SELECT "solid_queue_processes".* FROM "solid_queue_processes"
WHERE "solid_queue_processes"."last_heartbeat_at" <= timezone('UTC', now()) - interval '5 minutes'
ORDER BY "solid_queue_processes"."id" ASC
LIMIT 50
FOR UPDATE SKIP LOCKED;

CREATE TEMP TABLE failing ON COMMIT DROP AS
SELECT ce.* FROM solid_queue_claimed_executions AS ce
WHERE ce.process_id IN (SELECT id FROM prunable WHERE kind = 'Worker')
ORDER BY ce.id
FOR UPDATE;

INSERT INTO solid_queue_failed_executions (job_id, error, created_at)
SELECT job_id,
       '{"exception_class":"SolidQueue::Processes::ProcessPrunedError","message":"Process was found dead and pruned","backtrace":[]}',
       timezone('UTC', now())
FROM failing
WHERE job_id IN (SELECT id FROM solid_queue_jobs WHERE (arguments::jsonb->>'executions')::int + 1 >= 2)
ON CONFLICT (job_id) DO UPDATE SET error = EXCLUDED.error;

-- a pruned claim with attempts left is retried as retry_on would: a new job (executions + 1), ready at once
WITH pruned AS (
    SELECT j.*, (j.arguments::jsonb->>'executions')::int + 1 AS executions
    FROM solid_queue_jobs AS j
    WHERE j.id IN (SELECT job_id FROM failing)
      AND (j.arguments::jsonb->>'executions')::int + 1 < 2
), new_job AS (
    INSERT INTO solid_queue_jobs (queue_name, class_name, arguments, priority, active_job_id,
                                  scheduled_at, concurrency_key, created_at, updated_at)
    SELECT queue_name, class_name,
           jsonb_set(arguments::jsonb, '{executions}', to_jsonb(executions))::text,
           priority, active_job_id, timezone('UTC', now()),
           concurrency_key, timezone('UTC', now()), timezone('UTC', now())
    FROM pruned
    RETURNING id, queue_name, priority
)
INSERT INTO solid_queue_ready_executions (job_id, queue_name, priority, created_at)
SELECT id, queue_name, priority, timezone('UTC', now()) FROM new_job;

UPDATE solid_queue_jobs
SET finished_at = timezone('UTC', now()), updated_at = timezone('UTC', now())
WHERE id IN (SELECT job_id FROM failing)
  AND (arguments::jsonb->>'executions')::int + 1 < 2;

DELETE FROM solid_queue_claimed_executions WHERE id IN (SELECT id FROM failing);

DELETE FROM solid_queue_processes WHERE id IN (SELECT id FROM prunable);

-- name: state
WITH live AS (
    -- every job row of an event still to run: a second one is the event queued twice
    SELECT j.* FROM solid_queue_jobs AS j
    WHERE j.finished_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM solid_queue_failed_executions AS x WHERE x.job_id = j.id)
), latest AS (
    SELECT * FROM live
    UNION ALL
    (SELECT DISTINCT ON (active_job_id) j.*
     FROM solid_queue_jobs AS j
     WHERE NOT EXISTS (SELECT 1 FROM live WHERE live.active_job_id = j.active_job_id)
     ORDER BY active_job_id, id DESC)
), first_job AS (
    SELECT active_job_id, min(id) AS first_id FROM solid_queue_jobs GROUP BY active_job_id
)
SELECT l.active_job_id::text AS id, l.active_job_id::text AS event_id,
       CASE WHEN fe.id IS NOT NULL THEN 'DEAD'
            WHEN l.finished_at IS NOT NULL THEN 'SENT'
            WHEN ce.id IS NOT NULL THEN 'INPROGRESS'
            WHEN re.id IS NOT NULL OR se.id IS NOT NULL THEN 'READY'
            ELSE 'NO_EXECUTION' END AS status,
       ce.fence_token AS generation,
       CASE WHEN ce.id IS NULL OR fe.id IS NOT NULL OR l.finished_at IS NOT NULL THEN NULL
            ELSE p.id IS NULL
                 OR p.last_heartbeat_at <= timezone('UTC', now()) - interval '5 minutes' END AS lease_expired,
       CASE WHEN se.id IS NOT NULL THEN se.scheduled_at <= timezone('UTC', now())
            ELSE true END AS due
FROM latest AS l
JOIN first_job AS f ON f.active_job_id = l.active_job_id
LEFT JOIN solid_queue_failed_executions AS fe ON fe.job_id = l.id
LEFT JOIN solid_queue_claimed_executions AS ce ON ce.job_id = l.id
LEFT JOIN solid_queue_processes AS p ON p.id = ce.process_id
LEFT JOIN solid_queue_ready_executions AS re ON re.job_id = l.id
LEFT JOIN solid_queue_scheduled_executions AS se ON se.job_id = l.id
ORDER BY f.first_id, l.id

-- name: expire
UPDATE solid_queue_processes AS p
SET last_heartbeat_at = timezone('UTC', now()) - interval '1 hour'
FROM solid_queue_claimed_executions AS ce
JOIN solid_queue_jobs AS j ON j.id = ce.job_id
WHERE j.active_job_id = @id::text AND p.id = ce.process_id
  AND j.id = (SELECT max(id) FROM solid_queue_jobs WHERE active_job_id = @id::text)

-- name: due
WITH moved AS (
    DELETE FROM solid_queue_scheduled_executions AS se
    USING solid_queue_jobs AS j
    WHERE se.job_id = j.id AND j.active_job_id = @id::text
    RETURNING se.job_id, se.queue_name, se.priority
)
INSERT INTO solid_queue_ready_executions (job_id, queue_name, priority, created_at)
SELECT job_id, queue_name, priority, timezone('UTC', now()) FROM moved

-- name: age
UPDATE solid_queue_processes AS p
SET last_heartbeat_at = p.last_heartbeat_at - make_interval(secs => @seconds)
FROM solid_queue_claimed_executions AS ce
JOIN solid_queue_jobs AS j ON j.id = ce.job_id
WHERE j.active_job_id = @id::text AND p.id = ce.process_id
  AND j.id = (SELECT max(id) FROM solid_queue_jobs WHERE active_job_id = @id::text)
