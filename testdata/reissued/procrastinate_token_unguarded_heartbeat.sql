-- testdata/topologies/procrastinate_token.sql before its heartbeat compared the claim's token: the
-- heartbeat touched the worker named by the claim's handle, whoever's claim that worker now
-- holds. Kept as the control of TestReissuedWorkerIdKeepsNoLeaseAlive (reissued_test.go).
-- Token variant (issue 23) of testdata/libraries/fixed/procrastinate.sql, for the
-- topologies that forget (docs/topologies.md, docs/libraries.md). What changed:
-- procrastinate's claim returns no generation: the fixed file fences
-- on worker_id, a fresh procrastinate_workers identity per claim, which a rewind
-- can hand out again (a sequence value whose WAL was lost is reissued). Here a
-- uuid column of ours, procrastinate_jobs.fence_token, is stamped with
-- gen_random_uuid() by a statement of ours after procrastinate_fetch_job_v2, in
-- the claim's transaction, and returned as the generation (the fetch function
-- itself is unchanged); complete, both retry branches and the heartbeat's
-- applied check also compare it (fence_token = @generation::uuid). The
-- worker_id checks stay. attempts is still procrastinate's counter of finished
-- runs and the attempt budget. state returns fence_token as generation.
-- On a server that forgets an acknowledged commit (async-commit: a crash under
-- synchronous_commit=off; async-standby: a failover to a standby that was behind),
-- a counter fence comes back with the rewind: the next claim hands out the lost
-- claim's number again, and the lost claim's worker can finish the new claim.
-- A random token cannot be handed out twice, so the lost claim's outcome finds no
-- row to apply to. The library SQL below is the fixed file's, quoted as data;
-- only the lines named above differ, and its source note follows unchanged.
--
-- Fixed: procrastinate (testdata/libraries/procrastinate.sql) with three changes: complete and both retry branches also require the job's worker_id to be the claim's own worker (the handle's second part), and complete and retry's failed branch require status = 'doing' (no longer also 'todo'). The stalled-jobs rescue first finishes as 'failed' a stalled job whose run was its last attempt (attempts >= 1) and retries only the others (attempts < 1). The stalled-jobs rescue locks the stalled workers it reads (FOR UPDATE) and retries a job only while its worker is still the stalled one, and the heartbeat's applied check is a statement of its own, so a heartbeat between the rescue's read and its retry either keeps its worker out of the rescue or waits for it and reports refused.
-- Library: procrastinate (Python task queue on PostgreSQL: jobs table, plpgsql fetch/finish/retry functions, worker heartbeats)
-- Repository: https://github.com/procrastinate-org/procrastinate
-- Commit: f099a753730d5492bdebdc1c1f2796ffa5cf5671 (2026-06-27; git describe: 3.9.0-11-gf099a753, i.e. 11 commits after tag 3.9.0)
-- Source files:
--   procrastinate/sql/schema.sql: types procrastinate_job_status, procrastinate_job_to_defer_v1;
--     tables procrastinate_workers, procrastinate_jobs and their indexes; functions
--     procrastinate_defer_jobs_v1 (enqueue), procrastinate_fetch_job_v2 (claim, called
--     verbatim), procrastinate_finish_job_v1 (complete, body inlined), procrastinate_retry_job_v2
--     (retry and stalled-job rescue, body inlined), procrastinate_register_worker_v1 (inlined),
--     procrastinate_update_heartbeat_v1 (renew, inlined)
--   procrastinate/sql/queries.sql: defer_jobs, fetch_job, finish_job, retry_job,
--     select_stalled_jobs_by_heartbeat, register_worker, update_heartbeat
--   procrastinate/manager.py: JobManager.fetch_job (a row with a NULL id means no job),
--     get_stalled_jobs (seconds_since_heartbeat=30 default), retry_job (retry_at defaults to now)
--   procrastinate/worker.py: Worker._persist_job_status (retry_job when the strategy says so,
--     else finish_job), defaults update_heartbeat_interval=10s, stalled_worker_timeout=30s,
--     delete_jobs=NEVER
--   procrastinate/retry.py: RetryStrategy.get_retry_decision (no retry once job.attempts >= max_attempts)
--   docs/howto/production/retry_stalled_jobs.md: the documented retry_stalled_jobs periodic task
--     (get_stalled_jobs(), then retry_job(job) for each) -- the rescue below
--
-- How procrastinate works: a worker registers itself in procrastinate_workers and sends a
-- heartbeat every 10 seconds. procrastinate_fetch_job_v2 takes the highest-priority, oldest
-- 'todo' job that is due (scheduled_at) and not blocked by a job with the same lock,
-- FOR UPDATE SKIP LOCKED, and sets it 'doing' with the worker's id; nothing on the job row
-- records when, and no counter is raised on the claim (attempts counts finished runs). The
-- worker then calls procrastinate_finish_job_v1 ('succeeded' or 'failed', or deletes the row
-- when delete_jobs says so) or, when the task's RetryStrategy allows another attempt,
-- procrastinate_retry_job_v2 (back to 'todo', attempts + 1, scheduled_at = retry_at). Both
-- check only the job id and status: no worker id, no token. A job whose worker stopped
-- heartbeating for 30 seconds is "stalled"; procrastinate does not recover it by itself: the
-- documentation tells users to add a periodic task that lists stalled jobs
-- (select_stalled_jobs_by_heartbeat) and calls retry_job on each, which is the rescue here.
--
-- Adaptations:
--   - Schema trimmed to what these statements touch: the events table, periodic defers and all
--     triggers (event log, LISTEN/NOTIFY) are left out; they record, they do not decide.
--   - event_id: enqueue stores it in the job's args as {"event_id": ...} through
--     procrastinate_defer_jobs_v1 (queue 'default', task 'outbox.relay', priority 0, no lock,
--     no queueing_lock, scheduled_at NULL); claim and state read args->>'event_id'.
--   - Each claim registers a worker of its own (the INSERT of procrastinate_register_worker_v1)
--     and fetches with that worker id: the suite's expire/age act on one job, and a heartbeat
--     is per worker, so one registration per claim (a worker of concurrency 1 per run) lets a
--     fixture stall exactly one job. The claim's id is the handle 'job_id:worker_id' so that
--     renew can heartbeat the claim's own worker, as a real worker heartbeats its own id;
--     complete and retry use only the job id part, as the library's functions do.
--   - claim: procrastinate_fetch_job_v2(NULL, worker_id) called verbatim (NULL = all queues);
--     WHERE id IS NOT NULL added, as JobManager.fetch_job treats the all-NULL row as "no job".
--   - complete: the UPDATE of procrastinate_finish_job_v1(job_id, 'succeeded', false) inlined
--     (delete_jobs=NEVER is the worker's default, so done=keep), RETURNING id as the function
--     has; the function's RAISE when no row matched becomes "no row returned" (refused).
--   - retry: the worker's decision (RetryStrategy(max_attempts=1): retry while attempts < 1,
--     else finish as 'failed') is made in SQL on the row's attempts column instead of on the
--     attempts value the worker read at fetch time (the same unless someone else touched the
--     row); the retry branch is the UPDATE of procrastinate_retry_job_v2 with
--     retry_at = now() + 1 minute (a RetryStrategy(wait=60)), priority/queue/lock unchanged,
--     the failed branch the UPDATE of procrastinate_finish_job_v1(job_id, 'failed', false).
--     Both put in one statement (two data-modifying CTEs with disjoint conditions), RETURNING
--     id; the functions' RAISE on no match becomes no row. The abort_requested branch of
--     retry_job_v2 is left out (nothing requests aborts here).
--   - max_attempts=2: the suite's budget of 2 claims is RetryStrategy(max_attempts=1) (one
--     retry after the first run), chosen small so that counterexamples stay short.
--     procrastinate's default is retry=False: no retry at all.
--   - renew: the UPDATE of procrastinate_update_heartbeat_v1(worker_id) inlined, unguarded,
--     for the claim's own worker. The heartbeat is per worker, not per job, and always
--     "succeeds" while the worker row exists (even after the job finished), so the outcome is
--     observed, not guarded: applied = the heartbeat updated a worker that still holds this
--     job in 'doing', i.e. it actually kept this claim alive. (With a bare RETURNING id the
--     suite reports "renew applied to a SENT row" at once, which says only that a heartbeat is
--     not a job-level call.)
--   - lease=30s: get_stalled_jobs' default seconds_since_heartbeat (and the worker's
--     stalled_worker_timeout); the 10-second heartbeat interval is the worker's business.
--   - rescue: the documented retry_stalled_jobs task in one transaction, two statements as
--     the task runs them: select_stalled_jobs_by_heartbeat (queue and task_name NULL,
--     seconds_since_heartbeat 30) into a temporary table, then the UPDATE of
--     procrastinate_retry_job_v2 (retry_at = now()) for each listed job. In the library each
--     retry_job is its own transaction and raises when its job is no longer doing/failed;
--     here a job that moved on is simply not updated.
--   - policy=lenient: procrastinate has no lease on the job; a stalled worker that resumes may
--     still finish its job until the stalled-job task retries it, which is what it promises.
--   - States: todo -> READY, doing -> INPROGRESS, succeeded -> SENT, failed -> DEAD
--     (cancelled/aborted are not reached). lease_expired, for a doing job, is the rescue's own
--     test: no worker (pruned) or a heartbeat older than 30 seconds. due: scheduled_at NULL or
--     past. expire/age move the claiming worker's last_heartbeat back.
-- Fix: (1) complete and both retry branches: AND worker_id = <claim's worker> (each claim registers its own worker, so worker_id is
--   the library's own lock owner, one per claim); complete and the failed branch: status = 'doing' instead of IN ('todo', 'doing')
--   (retry and the rescue leave worker_id set on a 'todo' job): restores fencing (a stale owner's complete/retry cannot apply to a
--   newer claim, nor to a job the rescue or a retry put back to 'todo').
-- Fix: (2) rescue: an extra UPDATE (finish_job 'failed') for stalled jobs with attempts >= 1, and the retry UPDATE limited to attempts < 1:
--   restores attempt_budget (an abandoned last attempt goes DEAD at the next rescue, as the worker's RetryStrategy would decide).
-- Fix: (3) rescue: stalled_workers is read FOR UPDATE (MATERIALIZED, so the lock is taken where the heartbeat is tested), and both
--   UPDATEs also require the job's worker_id to be the one the stalled read saw; renew's heartbeat and its applied check become two
--   statements: restores one_live_owner and fencing under concurrency (issue 27). The stalled read and the retry are two statements
--   (in the library, two transactions); a heartbeat that committed between them revived the worker and reported applied, and its job
--   was put back to 'todo' anyway and fetched by another worker. With the lock, a heartbeat that comes first makes the read skip the
--   worker (PostgreSQL re-checks last_heartbeat on the locked row version), and one that comes later waits for the rescue's commit;
--   its check, now a statement with a snapshot of its own, then finds the job retried and reports refused (in one statement it read
--   the job from a snapshot taken before the wait). The worker_id re-check keeps the UPDATEs off a job retried and fetched by another
--   worker between the rescue's statements. Found by `outboxlab check --concurrent` (not linearizable: a Renew applied while a Rescue
--   ran, and the job claimed again on its live heartbeat).
-- outboxlab: fence=token
-- outboxlab: order=fifo
-- outboxlab: lease=30s
-- outboxlab: max_attempts=2
-- outboxlab: policy=lenient

-- name: schema
CREATE TYPE procrastinate_job_status AS ENUM (
    'todo',  -- The job is queued
    'doing',  -- The job has been fetched by a worker
    'succeeded',  -- The job ended successfully
    'failed',  -- The job ended with an error
    'cancelled', -- The job was cancelled
    'aborting',  -- legacy, not used anymore since v3.0.0
    'aborted'  -- The job was aborted
);

CREATE TYPE procrastinate_job_to_defer_v1 AS (
    queue_name character varying,
    task_name character varying,
    priority integer,
    lock text,
    queueing_lock text,
    args jsonb,
    scheduled_at timestamp with time zone
);

CREATE TABLE procrastinate_workers(
    id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
    last_heartbeat timestamp with time zone NOT NULL DEFAULT NOW()
);

CREATE TABLE procrastinate_jobs (
    id bigserial PRIMARY KEY,
    queue_name character varying(128) NOT NULL,
    task_name character varying(128) NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    lock text,
    queueing_lock text,
    args jsonb DEFAULT '{}' NOT NULL,
    status procrastinate_job_status DEFAULT 'todo'::procrastinate_job_status NOT NULL,
    scheduled_at timestamp with time zone NULL,
    attempts integer DEFAULT 0 NOT NULL,
    abort_requested boolean DEFAULT false NOT NULL,
    worker_id bigint REFERENCES procrastinate_workers(id) ON DELETE SET NULL,
    fence_token uuid,
    CONSTRAINT check_not_todo_abort_requested CHECK (NOT (status = 'todo' AND abort_requested = true))
);

CREATE UNIQUE INDEX procrastinate_jobs_queueing_lock_idx_v1 ON procrastinate_jobs (queueing_lock) WHERE status = 'todo';
CREATE UNIQUE INDEX procrastinate_jobs_lock_idx_v1 ON procrastinate_jobs (lock) WHERE status = 'doing';
CREATE INDEX idx_procrastinate_jobs_worker_not_null ON procrastinate_jobs(worker_id) WHERE worker_id IS NOT NULL AND status = 'doing'::procrastinate_job_status;
CREATE INDEX procrastinate_jobs_queue_name_idx_v1 ON procrastinate_jobs(queue_name);
CREATE INDEX procrastinate_jobs_id_lock_idx_v1 ON procrastinate_jobs (id, lock) WHERE status = ANY (ARRAY['todo'::procrastinate_job_status, 'doing'::procrastinate_job_status]);
CREATE INDEX procrastinate_jobs_priority_idx_v1 ON procrastinate_jobs(priority desc, id asc) WHERE (status = 'todo'::procrastinate_job_status);
CREATE INDEX idx_procrastinate_workers_last_heartbeat ON procrastinate_workers(last_heartbeat);

CREATE FUNCTION procrastinate_defer_jobs_v1(
    jobs procrastinate_job_to_defer_v1[]
)
    RETURNS bigint[]
    LANGUAGE plpgsql
AS $$
DECLARE
    job_ids bigint[];
BEGIN
    WITH inserted_jobs AS (
        INSERT INTO procrastinate_jobs (queue_name, task_name, priority, lock, queueing_lock, args, scheduled_at)
        SELECT (job).queue_name,
               (job).task_name,
               (job).priority,
               (job).lock,
               (job).queueing_lock,
               (job).args,
               (job).scheduled_at
        FROM unnest(jobs) AS job
        RETURNING id
    )
    SELECT array_agg(id) FROM inserted_jobs INTO job_ids;

    RETURN job_ids;
END;
$$;

CREATE FUNCTION procrastinate_fetch_job_v2(
    target_queue_names character varying[],
    p_worker_id bigint
)
    RETURNS procrastinate_jobs
    LANGUAGE plpgsql
AS $$
DECLARE
	found_jobs procrastinate_jobs;
BEGIN
    WITH candidate AS (
        SELECT jobs.*
            FROM procrastinate_jobs AS jobs
            WHERE
                -- reject the job if its lock has earlier or higher priority jobs
                NOT EXISTS (
                    SELECT 1
                        FROM procrastinate_jobs AS other_jobs
                        WHERE
                            jobs.lock IS NOT NULL
                            AND other_jobs.lock = jobs.lock
                            AND (
                                -- job with same lock is already running
                                other_jobs.status = 'doing'
                                OR
                                -- job with same lock is waiting and has higher priority (or same priority but was queued first)
                                (
                                    other_jobs.status = 'todo'
                                    AND (
                                        other_jobs.priority > jobs.priority
                                        OR (
                                        other_jobs.priority = jobs.priority
                                        AND other_jobs.id < jobs.id
                                        )
                                    )
                                )
                            )
                )
                AND jobs.status = 'todo'
                AND (target_queue_names IS NULL OR jobs.queue_name = ANY( target_queue_names ))
                AND (jobs.scheduled_at IS NULL OR jobs.scheduled_at <= now())
            ORDER BY jobs.priority DESC, jobs.id ASC LIMIT 1
            FOR UPDATE OF jobs SKIP LOCKED
    )
    UPDATE procrastinate_jobs
        SET status = 'doing', worker_id = p_worker_id
        FROM candidate
        WHERE procrastinate_jobs.id = candidate.id
        RETURNING procrastinate_jobs.* INTO found_jobs;

 RETURN found_jobs;
END;
$$;

-- name: enqueue
SELECT unnest(
  procrastinate_defer_jobs_v1(
    ARRAY[ROW('default', 'outbox.relay', 0, NULL, NULL,
              jsonb_build_object('event_id', @event_id::text), NULL)]::procrastinate_job_to_defer_v1[]
  )
) AS id

-- name: claim
CREATE TEMP TABLE registered ON COMMIT DROP AS
WITH w AS (
    INSERT INTO procrastinate_workers DEFAULT VALUES
    RETURNING procrastinate_workers.id
)
SELECT id AS worker_id FROM w;

CREATE TEMP TABLE fetched ON COMMIT DROP AS
SELECT j.id
FROM registered AS r,
     LATERAL procrastinate_fetch_job_v2(NULL::varchar[], r.worker_id) AS j
WHERE j.id IS NOT NULL;

-- ours: the fetched job's fencing token
UPDATE procrastinate_jobs AS j
SET fence_token = gen_random_uuid()
FROM fetched AS f
WHERE j.id = f.id
RETURNING j.id::text || ':' || j.worker_id::text AS id, j.args->>'event_id' AS event_id, j.fence_token AS generation;

-- name: complete
UPDATE procrastinate_jobs
SET status = 'succeeded',
    abort_requested = false,
    attempts = CASE status
        WHEN 'doing' THEN attempts + 1 ELSE attempts
    END
WHERE id = split_part(@id::text, ':', 1)::bigint AND status = 'doing'
  AND worker_id = split_part(@id::text, ':', 2)::bigint
  AND fence_token = @generation::uuid
RETURNING id

-- name: retry
WITH failed AS (
    -- RetryStrategy(max_attempts=1) says no more retries: finish_job(job, 'failed', false)
    UPDATE procrastinate_jobs
    SET status = 'failed',
        abort_requested = false,
        attempts = CASE status
            WHEN 'doing' THEN attempts + 1 ELSE attempts
        END
    WHERE id = split_part(@id::text, ':', 1)::bigint AND status = 'doing'
      AND worker_id = split_part(@id::text, ':', 2)::bigint
      AND fence_token = @generation::uuid
      AND attempts >= 1
    RETURNING id
), retried AS (
    -- otherwise retry_job(job, retry_at = now() + 60 s)
    UPDATE procrastinate_jobs
    SET status = 'todo'::procrastinate_job_status,
        attempts = attempts + 1,
        scheduled_at = now() + interval '60 seconds',
        priority = COALESCE(NULL, priority),
        queue_name = COALESCE(NULL, queue_name),
        lock = COALESCE(NULL, lock)
    WHERE id = split_part(@id::text, ':', 1)::bigint AND status IN ('doing', 'failed')
      AND worker_id = split_part(@id::text, ':', 2)::bigint
      AND fence_token = @generation::uuid
      AND attempts < 1
    RETURNING id
)
SELECT id FROM failed
UNION ALL
SELECT id FROM retried

-- name: renew
UPDATE procrastinate_workers
SET last_heartbeat = NOW()
WHERE id = split_part(@id::text, ':', 2)::bigint;

-- observed in a statement of its own: a snapshot taken after the heartbeat (and after any rescue it waited for)
SELECT EXISTS (
    SELECT 1 FROM procrastinate_workers AS h
    JOIN procrastinate_jobs AS j ON j.worker_id = h.id
    WHERE h.id = split_part(@id::text, ':', 2)::bigint
      AND j.id = split_part(@id::text, ':', 1)::bigint AND j.status = 'doing'
      AND j.fence_token = @generation::uuid
) AS applied

-- name: rescue
CREATE TEMP TABLE stalled_jobs ON COMMIT DROP AS
WITH stalled_workers AS MATERIALIZED (
   SELECT id
     FROM procrastinate_workers
    WHERE last_heartbeat < NOW() - (30 || ' SECOND')::INTERVAL
   FOR UPDATE
)
SELECT job.id, status, task_name, priority, lock, queueing_lock,
       args, scheduled_at, queue_name, attempts, job.worker_id
  FROM procrastinate_jobs job
 LEFT JOIN stalled_workers sw ON sw.id = job.worker_id
 WHERE job.status = 'doing'
   AND (NULL::varchar IS NULL OR job.queue_name = NULL)
   AND (NULL::varchar IS NULL OR job.task_name = NULL)
   AND (job.worker_id IS NULL OR sw.id IS NOT NULL);

-- an exhausted stalled job (this was its last attempt) is finished as failed
UPDATE procrastinate_jobs
SET status = 'failed',
    abort_requested = false,
    attempts = procrastinate_jobs.attempts + 1
FROM stalled_jobs AS s
WHERE procrastinate_jobs.id = s.id AND procrastinate_jobs.status = 'doing'
  AND procrastinate_jobs.worker_id IS NOT DISTINCT FROM s.worker_id
  AND procrastinate_jobs.attempts >= 1;

UPDATE procrastinate_jobs
SET status = 'todo'::procrastinate_job_status,
    attempts = procrastinate_jobs.attempts + 1,
    scheduled_at = now(),
    priority = COALESCE(NULL, procrastinate_jobs.priority),
    queue_name = COALESCE(NULL, procrastinate_jobs.queue_name),
    lock = COALESCE(NULL, procrastinate_jobs.lock)
FROM stalled_jobs AS s
WHERE procrastinate_jobs.id = s.id AND procrastinate_jobs.status IN ('doing', 'failed')
  AND procrastinate_jobs.worker_id IS NOT DISTINCT FROM s.worker_id
  AND procrastinate_jobs.attempts < 1
RETURNING procrastinate_jobs.id;

-- name: state
SELECT j.id, j.args->>'event_id' AS event_id,
       CASE j.status WHEN 'todo' THEN 'READY'
                     WHEN 'doing' THEN 'INPROGRESS'
                     WHEN 'succeeded' THEN 'SENT'
                     WHEN 'failed' THEN 'DEAD' END AS status,
       j.fence_token AS generation,
       CASE WHEN j.status <> 'doing' THEN NULL
            ELSE w.id IS NULL OR w.last_heartbeat < now() - interval '30 seconds' END AS lease_expired,
       j.scheduled_at IS NULL OR j.scheduled_at <= now() AS due
FROM procrastinate_jobs AS j
LEFT JOIN procrastinate_workers AS w ON w.id = j.worker_id
ORDER BY j.id

-- name: expire
UPDATE procrastinate_workers AS w
SET last_heartbeat = now() - interval '1 hour'
FROM procrastinate_jobs AS j
WHERE j.id = @id AND j.status = 'doing' AND w.id = j.worker_id

-- name: due
UPDATE procrastinate_jobs SET scheduled_at = now() - interval '1 second'
WHERE id = @id AND status = 'todo'

-- name: age
UPDATE procrastinate_workers AS w
SET last_heartbeat = w.last_heartbeat - make_interval(secs => @seconds)
FROM procrastinate_jobs AS j
WHERE j.id = @id AND j.status = 'doing' AND w.id = j.worker_id
