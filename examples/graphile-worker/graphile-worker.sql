-- Harness side of graphile-worker 0.18.0's own code run as a worker (worker.mjs):
--   outboxlab check --worker 'node examples/graphile-worker/worker.mjs' examples/graphile-worker/graphile-worker.sql
-- The worker installs graphile-worker with its own migrations (the install feature), so this
-- file has no schema section, and claims, completes, fails and resets locks with the worker
-- pool's own functions, so it has no claim, complete, retry, renew or rescue section. What is
-- left is the suite's side, written against the tables the migrations create (_private_jobs,
-- _private_tasks, _private_job_queues).
--
--   - Each job is written as one with 6 of its 8 attempts spent (worker.mjs says why: the
--     library's fixed backoff, exp(min(attempts, 10)) seconds, is 2.7 s after a first attempt
--     and 18 minutes after a seventh). The suite's attempt budget is the last two:
--     max_attempts=2, generation = attempts - 6.
--   - enqueue writes what add_job writes for a job with no queue name, key or flags (run_at and
--     priority take their defaults), with attempts and max_attempts set as above.
--   - lease=4h: resetLockedAt unlocks jobs locked more than 4 hours ago; there is no heartbeat.
--   - policy=lenient: nothing checks lock age when a job completes or fails.
--   - order=any: the fetch orders by priority, run_at, and jobs the suite enqueues in one
--     transaction share run_at = now(), a tie with no tie-breaker.
--   - batch=2: batchGetJobs' batchSize (a pool fetches more than one with localQueue.size).
--   - done=delete: a completed job's row is deleted.
-- States: locked_at not null -> INPROGRESS; unlocked with attempts >= max_attempts -> DEAD
-- (permanently failed); otherwise READY; a deleted job is absent (SENT).
-- outboxlab: order=any
-- outboxlab: batch=2
-- outboxlab: lease=4h
-- outboxlab: policy=lenient
-- outboxlab: max_attempts=2
-- outboxlab: done=delete

-- name: enqueue
INSERT INTO _private_jobs (task_id, payload, attempts, max_attempts)
SELECT t.id, json_build_object('event_id', @event_id::text), 6, 8
FROM _private_tasks t
WHERE t.identifier = 'outbox'
RETURNING id

-- name: state
SELECT id, payload->>'event_id' AS event_id,
       CASE WHEN locked_at IS NOT NULL THEN 'INPROGRESS'
            WHEN attempts >= max_attempts THEN 'DEAD'
            ELSE 'READY' END AS status,
       (attempts - 6)::bigint AS generation,
       CASE WHEN locked_at IS NULL THEN NULL
            ELSE locked_at < now() - interval '4 hours' END AS lease_expired,
       run_at <= now() AS due
FROM _private_jobs
ORDER BY id

-- name: expire
UPDATE _private_jobs SET locked_at = now() - interval '4 hours 1 minute'
WHERE id = @id::bigint AND locked_at IS NOT NULL

-- name: due
UPDATE _private_jobs SET run_at = now() - interval '1 minute'
WHERE id = @id::bigint AND locked_at IS NULL

-- name: age
UPDATE _private_jobs SET locked_at = locked_at - make_interval(secs => @seconds)
WHERE id = @id::bigint AND locked_at IS NOT NULL

-- name: reset
-- The jobs and named queues go; the task identifiers and the migration versions stay (a worker
-- caches its task's id). One statement: its data-modifying CTE runs with it.
WITH queues AS (DELETE FROM _private_job_queues)
DELETE FROM _private_jobs
