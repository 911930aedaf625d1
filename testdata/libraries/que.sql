-- Library: que (Ruby job queue on PostgreSQL: que_jobs table, a job held by its worker's session advisory lock)
-- Repository: https://github.com/que-rb/que
-- Commit: 17fb2c3b75b37599bf17043dbb692555f582f249 ("Changelog: Add entry for version 2.4.1")
-- Version: v2.4.1
-- Strategy: que has one: a job is the worker's while the locker's session holds pg_try_advisory_lock(id).
-- Sources:
--   lib/que/poller.rb: SQL[:poll_jobs] (the recursive CTE that walks the queue in (priority, run_at, id)
--     order and locks each candidate with pg_temp.lock_and_update_priorities), and the two pg_temp functions
--     it makes on each connection (lock_and_update_priorities, que_highest_remaining_priority)
--   lib/que/locker.rb: the ids it passes as already held (its buffer and running jobs), and its
--     pg_advisory_unlock once a job's work is done
--   lib/que/job_methods.rb: SQL[:finish_job] (finished_at = now(), by id) and SQL[:set_error] (error_count + 1,
--     run_at = now() + the retry interval, by id)
--   lib/que/migrations/: the que_jobs columns these statements read and write
--
-- How que works: a locker process keeps one connection, polls with the CTE, and the job stays locked by
-- that connection's session until the worker has run it: finish_job (or set_error for a failure) then
-- pg_advisory_unlock. No column records a claim, and no lease runs out: the lock goes when the session
-- does (a dropped connection, a killed process, a restarted server), and the job is then claimable again.
-- finish_job and set_error update by id alone.
--
-- Adaptations:
--   - lease=session: the lease is the session's lock (docs/protocol-format.md, Session leases); the file
--     therefore has no expire or age section.
--   - que_jobs keeps the columns these statements read or write, in the run's schema rather than public,
--     plus event_id (the format's event).
--   - The two pg_temp functions and the type are made once in the schema: que makes them on each
--     connection, and the schema section runs on the harness's.
--   - The lock is pg_try_advisory_lock(space, id) with a first key of the schema's own (que_lock_space)
--     instead of que's one bigint key, so that runs in other schemas of one database never share a lock.
--   - The poll's parameters: queue 'default'; the ids the locker holds already ($2), read from pg_locks for
--     the calling session, as que's locker passes the ids in its buffer; priorities {"32767": 1}, one free
--     worker of any priority.
--   - complete is finish_job then the locker's unlock, retry is set_error then the unlock, each as one
--     statement. que's default retry interval is error_count^4 + 3 seconds; a 4-second backoff would end by
--     the wall clock inside a check, so this file waits error_count^4 + 3 MINUTES, and a retried job becomes
--     claimable through the due fixture.
--   - order=any: the poll orders by (priority, run_at, id), and a retried job due again goes by its new
--     run_at, not by enqueue order. The due fixture moves run_at to a second ago (never later).
--   - No attempt budget: que's default retries without end (its job class may set one), so no max_attempts.
--   - state derives a status: SENT once finished, INPROGRESS while some session holds the job's lock,
--     READY otherwise (que keeps no status for a claim, so a job whose lock has gone reads READY and due).
-- que keeps no generation and finishes by id: a worker whose session ended (its connection dropped) still
-- finishes the job another worker has locked since. Through a transaction pooler the lock stays on a server
-- connection, and every client that runs there holds it too.
-- The properties this SQL breaks, pinned by TestLibraryProfiles
-- (outboxlab check --profile --faults=false; docs/libraries.md):
-- profile: fencing strict_expiry terminal
-- profile-pooler-transaction: no_stranded_row fencing strict_expiry terminal
-- outboxlab: order=any
-- outboxlab: lease=session

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
    job_schema_version integer NOT NULL DEFAULT 2
);
CREATE INDEX que_poll_idx ON que_jobs (queue, priority, run_at, id)
    WHERE finished_at IS NULL AND expired_at IS NULL;
CREATE FUNCTION que_lock_space() RETURNS int LANGUAGE sql STABLE AS $$
    SELECT hashtext(current_schema()) & 2147483647
$$;
CREATE FUNCTION que_locked(job bigint, mine boolean) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1 FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND (NOT mine OR pid = pg_backend_pid())
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND classid = que_lock_space()::oid AND objid = job::oid AND objsubid = 2)
$$;
CREATE TYPE que_query_result AS (
    locked boolean,
    remaining_priorities jsonb
);
CREATE FUNCTION lock_and_update_priorities(priorities jsonb, job que_jobs)
RETURNS que_query_result
AS $$
    WITH
      lock_taken AS (
        SELECT pg_try_advisory_lock(que_lock_space(), (job).id::int) AS taken
      ),
      relevant AS (
        SELECT priority, count
        FROM (
          SELECT
            key::smallint AS priority,
            value::text::integer AS count
          FROM jsonb_each(priorities)
          ) t1
        WHERE priority >= (job).priority
        ORDER BY priority ASC
        LIMIT 1
      )
    SELECT
      (SELECT taken FROM lock_taken),
      CASE (SELECT taken FROM lock_taken)
      WHEN false THEN
        priorities
      WHEN true THEN
        CASE count
        WHEN 1 THEN
          priorities - priority::text
        ELSE
          jsonb_set(
            priorities,
            ARRAY[priority::text],
            to_jsonb(count - 1)
          )
        END
      END
    FROM relevant
$$
STABLE
LANGUAGE SQL;
CREATE FUNCTION que_highest_remaining_priority(priorities jsonb) RETURNS smallint AS $$
    SELECT max(key::smallint) FROM jsonb_each(priorities)
$$
STABLE
LANGUAGE SQL;

-- name: enqueue
INSERT INTO que_jobs (event_id) VALUES (@event_id);

-- name: claim
WITH RECURSIVE held AS (
  SELECT coalesce(array_agg(id), '{}'::bigint[]) AS ids
  FROM que_jobs WHERE que_locked(id, true)
), jobs AS (
  SELECT
    (j).*,
    l.locked,
    l.remaining_priorities
  FROM (
    SELECT j
    FROM que_jobs AS j
    WHERE queue = 'default'::text
      AND job_schema_version = 2
      AND NOT id = ANY((SELECT ids FROM held)::bigint[])
      AND priority <= que_highest_remaining_priority('{"32767": 1}'::jsonb)
      AND run_at <= now()
      AND finished_at IS NULL AND expired_at IS NULL
    ORDER BY priority, run_at, id
    LIMIT 1
  ) AS t1
  JOIN LATERAL (SELECT * FROM lock_and_update_priorities('{"32767": 1}'::jsonb, j)) AS l ON true
  UNION ALL (
    SELECT
      (j).*,
      l.locked,
      l.remaining_priorities
    FROM (
      SELECT
        remaining_priorities,
        (
          SELECT j
          FROM que_jobs AS j
          WHERE queue = 'default'::text
            AND job_schema_version = 2
            AND NOT id = ANY((SELECT ids FROM held)::bigint[])
            AND priority <= que_highest_remaining_priority(jobs.remaining_priorities)
            AND run_at <= now()
            AND finished_at IS NULL AND expired_at IS NULL
            AND (priority, run_at, id) >
              (jobs.priority, jobs.run_at, jobs.id)
          ORDER BY priority, run_at, id
          LIMIT 1
        ) AS j

      FROM jobs
      WHERE jobs.id IS NOT NULL AND jobs.remaining_priorities != '{}'::jsonb
      LIMIT 1
    ) AS t1
    JOIN LATERAL (SELECT * FROM lock_and_update_priorities(remaining_priorities, j)) AS l ON true
  )
)
SELECT id, event_id
FROM jobs
WHERE locked;

-- name: complete
WITH finished AS (
  UPDATE que_jobs
  SET finished_at = now()
  WHERE id = @id::bigint
  RETURNING id
)
SELECT id FROM finished
WHERE pg_advisory_unlock(que_lock_space(), id::int) IS NOT NULL;

-- name: retry
WITH errored AS (
  UPDATE que_jobs
  SET error_count          = error_count + 1,
      run_at               = now() + ((error_count + 1) ^ 4 + 3)::float * '1 minute'::interval,
      last_error_message   = left('outboxlab retry'::text, 500),
      last_error_backtrace = left(''::text, 10000)
  WHERE id = @id::bigint
  RETURNING id
)
SELECT id FROM errored
WHERE pg_advisory_unlock(que_lock_space(), id::int) IS NOT NULL;

-- name: due
UPDATE que_jobs SET run_at = least(run_at, now() - interval '1 second') WHERE id = @id;

-- name: state
SELECT id, event_id,
       CASE WHEN finished_at IS NOT NULL THEN 'SENT'
            WHEN que_locked(id, false) THEN 'INPROGRESS'
            ELSE 'READY' END AS status,
       CASE WHEN finished_at IS NULL AND que_locked(id, false) THEN false END AS lease_expired,
       run_at <= now() AS due
FROM que_jobs ORDER BY id;
