-- Fixed: que (testdata/libraries/que.sql) with a stored lease in place of
-- the session's advisory lock, so that it survives a transaction pooler.
--
-- A session lock cannot hold a job behind PgBouncer in transaction mode:
-- the lock stays on whichever server connection the claim ran on, and the
-- worker's later transactions run on others. So the claim no longer takes
-- pg_try_advisory_lock; it locks the first due row (or the first expired
-- lease) with FOR UPDATE SKIP LOCKED, in que's order (priority, run_at,
-- id), and stores a lease (locked_until) and a generation it raises by one.
-- finish_job and set_error keep their writes and gain the guard que lacks:
-- they apply only for the claim's own generation while its lease lasts,
-- and they end the lease. The advisory unlock goes with the lock. Nothing
-- else of que's SQL changes (its retry waits minutes, as in que.sql); the
-- poll's priority bookkeeping
-- (lock_and_update_priorities) had no effect with one free worker and is
-- left out with the lock it took.
--
-- The same fix as a session lease (outcomes that check that the caller's
-- own session holds the lock, and a generation) passes on single and
-- behind a session pooler, and still fails behind a transaction pooler
-- (testdata/correct/session_lease.sql, docs/topologies.md).
-- outboxlab: order=any
-- outboxlab: lease=30s

-- name: schema
CREATE TABLE que_jobs (
    priority smallint NOT NULL DEFAULT 100,
    run_at timestamptz NOT NULL DEFAULT now(),
    id bigserial PRIMARY KEY,
    event_id text NOT NULL UNIQUE,
    error_count integer NOT NULL DEFAULT 0,
    last_error_message text,
    last_error_backtrace text,
    queue text NOT NULL DEFAULT 'default',
    finished_at timestamptz,
    expired_at timestamptz,
    job_schema_version integer NOT NULL DEFAULT 2,
    locked_until timestamptz,
    generation bigint NOT NULL DEFAULT 0
);
CREATE INDEX que_poll_idx ON que_jobs (queue, priority, run_at, id)
    WHERE finished_at IS NULL AND expired_at IS NULL;

-- name: enqueue
INSERT INTO que_jobs (event_id) VALUES (@event_id);

-- name: claim
WITH job AS (
  SELECT id
  FROM que_jobs
  WHERE queue = 'default'::text
    AND job_schema_version = 2
    AND finished_at IS NULL AND expired_at IS NULL
    AND (locked_until IS NULL AND run_at <= now() OR locked_until <= now())
  ORDER BY priority, run_at, id
  LIMIT 1
  FOR UPDATE SKIP LOCKED
)
UPDATE que_jobs AS j
SET locked_until = now() + interval '30 seconds',
    generation   = j.generation + 1
FROM job
WHERE j.id = job.id
RETURNING j.id, j.event_id, j.generation;

-- name: complete
UPDATE que_jobs
SET finished_at = now(),
    locked_until = NULL
WHERE id = @id::bigint
  AND generation = @generation AND locked_until > now()
  AND finished_at IS NULL
RETURNING id;

-- name: retry
UPDATE que_jobs
SET error_count          = error_count + 1,
    run_at               = now() + ((error_count + 1) ^ 4 + 3)::float * '1 minute'::interval,
    last_error_message   = left('outboxlab retry'::text, 500),
    last_error_backtrace = left(''::text, 10000),
    locked_until         = NULL
WHERE id = @id::bigint
  AND generation = @generation AND locked_until > now()
  AND finished_at IS NULL
RETURNING id;

-- name: expire
UPDATE que_jobs SET locked_until = now() - interval '1 second'
WHERE id = @id AND locked_until IS NOT NULL;

-- name: age
UPDATE que_jobs SET locked_until = locked_until - make_interval(secs => @seconds)
WHERE id = @id AND locked_until IS NOT NULL;

-- name: due
UPDATE que_jobs SET run_at = least(run_at, now() - interval '1 second') WHERE id = @id;

-- name: state
SELECT id, event_id, generation,
       CASE WHEN finished_at IS NOT NULL THEN 'SENT'
            WHEN locked_until IS NOT NULL THEN 'INPROGRESS'
            ELSE 'READY' END AS status,
       CASE WHEN finished_at IS NULL AND locked_until IS NOT NULL THEN locked_until <= now() END AS lease_expired,
       run_at <= now() AS due
FROM que_jobs ORDER BY id;
