-- Token variant (issue 23) of testdata/libraries/fixed/pgqueuer.sql, for the
-- topologies that forget (docs/topologies.md, docs/libraries.md). What changed:
-- a UUID column of ours, pgqueuer.fence_token, is stamped with
-- gen_random_uuid() by the dequeue's UPDATE (claimed) and returned as the
-- generation; complete (log_jobs' delete), both retry branches and renew
-- (the heartbeat) compare it (fence_token = @generation::uuid) where the fixed
-- file compared attempts = @generation. attempts is still the fixed file's
-- counter of picks and the attempt budget (the dequeue still raises it, the
-- retry still decides retry or hold at attempts < 2, the dequeue still holds an
-- exhausted stale job). state returns fence_token as generation.
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
-- Fixed: pgqueuer (testdata/libraries/pgqueuer.sql) with six changes: The dequeue raises attempts on every pick (and no longer the retry) and returns it as generation, so attempts counts claims, abandoned ones too, and is the claim's fencing token (state returns it as generation). complete, retry and renew apply only to the claim's own row: status = 'picked' AND attempts = @generation. The retry decision moves with the counter: retry while attempts < 2, hold as 'failed' at attempts >= 2 (the same DatabaseRetryEntrypointExecutor(max_attempts=1)). The dequeue no longer re-picks a stale job whose last attempt was abandoned (attempts >= 2) and holds it as 'failed' instead (on_failure='hold'), with its log row. The dequeue locks only the rows it takes: next_queued and next_stale become unlocked candidate lists and eligible takes its LIMIT with FOR UPDATE SKIP LOCKED. Its locking SELECT (eligible) repeats the candidates' predicates, so that FOR UPDATE re-checks them on a row another dequeue took meanwhile.
-- Library: pgqueuer (Python job queue on PostgreSQL: one queue table, heartbeat-based re-pick, a log table)
-- Repository: https://github.com/janbjorge/pgqueuer
-- Commit: 12b99d9993589a5e6b62c349e2a750a8650847e1 (2026-08-22; git describe: v1.3.2-13-g12b99d9, 13 commits after tag v1.3.2)
-- Source files:
--   pgqueuer/adapters/persistence/qb.py: QueryBuilderEnvironment.build_install_query (type
--     pgqueuer_status, tables pgqueuer and pgqueuer_log with their indexes);
--     QueryQueueBuilder.build_dequeue_query (claim), build_enqueue_query (enqueue),
--     build_log_job_query (complete, and the terminal failure of on_failure='hold'),
--     build_retry_job_query (retry), build_update_heartbeat_query (renew)
--   pgqueuer/adapters/persistence/queries.py: Queries.dequeue (parameter order: batch_size,
--     entrypoints, concurrency limits, queue_manager_id, global_concurrency_limit,
--     heartbeat_timeout), log_jobs, retry_job
--   pgqueuer/core/qm.py: QueueManager.run (defaults batch_size=10, heartbeat_timeout=30s,
--     max_concurrent_tasks=None -> sys.maxsize), _dispatch (heartbeat every
--     heartbeat_timeout/2; RetryRequested -> retry_job; exception -> 'failed' when
--     on_failure='hold', else 'exception'; success -> 'successful'), entrypoint()
--     (on_failure='delete' by default)
--   pgqueuer/core/executors.py: DatabaseRetryEntrypointExecutor (max_attempts=5 default:
--     RetryRequested while job.attempts < max_attempts, then the exception propagates)
--
-- How pgqueuer works: each QueueManager has a random queue_manager_id. Its dequeue statement
-- takes, in one statement, up to batch_size rows that are either 'queued' and past
-- execute_after, or 'picked' with a heartbeat older than heartbeat_timeout (a crashed or
-- stalled worker's rows), FOR UPDATE SKIP LOCKED, in priority then id order, and sets them
-- 'picked' with heartbeat = now() and its own queue_manager_id. While a job runs its worker
-- refreshes the heartbeat every heartbeat_timeout/2 (buffered). The outcome is written by
-- log_jobs: a finished job is DELETEd from the queue table and a row is appended to
-- pgqueuer_log; with on_failure='hold' a terminally failed job stays as 'failed'. A retry
-- (RetryRequested, raised by DatabaseRetryEntrypointExecutor) sets the row back to 'queued'
-- with a delay and attempts + 1. None of these statements checks the status or the
-- queue_manager_id: the job id alone decides. There is no separate reaper: the dequeue
-- itself re-picks stale jobs, and attempts is raised only by retry_job, not by a claim.
--
-- Adaptations:
--   - Schema trimmed to the queue and log tables (statistics, schedules, the NOTIFY trigger
--     and function left out); the 'durable' durability (all tables logged) is used.
--   - event_id: enqueue puts it in the job's payload (bytea, UTF-8); claim and state read it
--     back with convert_from. Entrypoint fixed to 'outbox.relay', priority 0, no
--     execute_after delay, no dedupe_key, no headers.
--   - claim: build_dequeue_query verbatim with its parameters written in: $1 batch_size = 3
--     (batch=3; the library's default is 10), $2/$3 one entrypoint 'outbox.relay' with
--     concurrency_limit 0 (unlimited), $4 queue_manager_id = md5(@worker)::uuid (one queue
--     manager per suite worker), $5 global_concurrency_limit = 9223372036854775807
--     (sys.maxsize, what run() passes when max_concurrent_tasks is None), $6 heartbeat_timeout
--     = 30 seconds (the default). Its final SELECT * is narrowed to id and event_id.
--   - complete: build_log_job_query for one job with status 'successful' (its UNNEST
--     arrays hold one element), RETURNING job_id AS id added to the final INSERT into the
--     log. The worker's JobStatusLogBuffer batches these writes; here each runs at once.
--     The row is deleted: done=delete, and the state query reads only the live table (the
--     log is history with one row per transition, not a status).
--   - retry: the decision of DatabaseRetryEntrypointExecutor(max_attempts=1) (retry while
--     attempts < 1, else terminal failure) is made in SQL on the row's attempts column
--     rather than on the job.attempts the worker read at dequeue time. The retry branch is
--     build_retry_job_query with delay = 60 seconds (the executor's default backoff is
--     1 s * 2^attempts, capped at 5 minutes); the terminal branch is build_log_job_query's
--     'held' UPDATE with status 'failed' (on_failure='hold'). Both are CTEs of one statement
--     with disjoint conditions on attempts, each with its log insert; RETURNING added.
--   - max_attempts=2: the suite's budget of 2 claims is DatabaseRetryEntrypointExecutor
--     (max_attempts=1): the run at attempts 0 retries, the run at attempts 1 fails for good.
--     The executor's default is max_attempts=5 (6 runs); the budget is chosen small so that
--     counterexamples stay short. The plain EntrypointExecutor never retries.
--     on_failure='hold' (the library's option to keep a terminally failed job as 'failed')
--     is chosen so that an exhausted job stays visible as DEAD; the default,
--     on_failure='delete', deletes it with an 'exception' log row.
--   - renew: build_update_heartbeat_query for one id, RETURNING id added (it has none).
--   - lease=30s: heartbeat_timeout's default (the staleness threshold the dequeue uses).
--   - policy=lenient: pgqueuer's outcomes check nothing about the heartbeat; a job whose
--     heartbeat lapsed is only at risk once another dequeue re-picks it, so a late outcome
--     before that is what pgqueuer itself allows (under strict the first counterexample is
--     merely a heartbeat after expiry, before anyone took the row).
--   - No rescue section: pgqueuer has no reaper; its dequeue re-picks stale 'picked' rows.
--   - States: queued -> READY, picked -> INPROGRESS, failed -> DEAD; successful jobs are
--     deleted. lease_expired, for a picked row, is the dequeue's own test: heartbeat older
--     than 30 seconds. due: execute_after < now(), as the dequeue tests it. expire/age move
--     the heartbeat back; due moves execute_after back.
-- Fix: (1) claim SET attempts = attempts + 1, RETURNING attempts AS generation; retry no longer raises attempts; state adds generation:
--   restores attempt_budget (an abandoned pick counts: a stale re-pick is the next attempt) and gives the fencing token.
-- Fix: (2) complete's DELETE, both retry branches and renew: AND status = 'picked' AND attempts = @generation: restores fencing (a stale
--   owner's complete/retry/renew cannot apply to a re-picked or retried job) and terminal (no outcome on a 'failed' (DEAD) row).
-- Fix: (3) retry branches at attempts < 2 / >= 2 (was < 1 / >= 1 on a counter of retries): the same budget of 2 runs on the new counter.
-- Fix: (4) dequeue: next_stale AND q.attempts < 2, plus CTEs stale_exhausted (FOR UPDATE SKIP LOCKED) / held / held_log that set a
--   stale job at attempts >= 2 to 'failed': restores attempt_budget (an abandoned last attempt is DEAD by the next claim; pgqueuer has no reaper).
-- Fix: (5) dequeue: FOR UPDATE SKIP LOCKED moved from next_queued/next_stale (each locked up to 3 rows, so a batch claim locked up to 6
--   and kept the unclaimed ones locked for its transaction) to eligible, its LIMIT applied to locked rows; next_queued's LIMIT 3 and
--   next_stale's LIMIT 3 dropped (the lateral keeps LIMIT a.remaining, the concurrency limit): restores no_stranded_row (a claim inside an
--   open transaction no longer hides stale rows it did not take from other claims). The library's own dequeue has this lock pattern;
--   the check found it once (1)-(4) were in place.
-- Fix: (6) dequeue: eligible's own WHERE repeats the candidates' predicates (status 'queued', or 'picked' with a stale heartbeat
--   and attempts < 2; execute_after < NOW()): restores one_live_owner under concurrency (issue 27). Fix (5) had left them only in
--   the unlocked candidate CTEs, read in the statement's snapshot, and eligible's FOR UPDATE SKIP LOCKED re-checked nothing but the
--   id: a row that another dequeue picked and committed after this one's snapshot was locked on its new version and picked a second
--   time, on a live heartbeat (`outboxlab check --concurrent`: two overlapping claims returned the same rows, gen=1 and gen=2;
--   5 runs of 5). The library's own dequeue locks in next_queued/next_stale, whose WHERE holds the predicates, and has no such race.
-- outboxlab: fence=token
-- outboxlab: order=fifo
-- outboxlab: batch=3
-- outboxlab: lease=30s
-- outboxlab: max_attempts=2
-- outboxlab: done=delete
-- outboxlab: policy=lenient

-- name: schema
CREATE TYPE pgqueuer_status AS ENUM ('queued', 'picked', 'successful', 'exception', 'canceled', 'deleted', 'failed');
CREATE TABLE pgqueuer (
    id BIGSERIAL PRIMARY KEY,
    priority INT NOT NULL,
    queue_manager_id UUID,
    created TIMESTAMP WITH TIME ZONE DEFAULT NOW() NOT NULL,
    updated TIMESTAMP WITH TIME ZONE DEFAULT NOW() NOT NULL,
    heartbeat TIMESTAMP WITH TIME ZONE DEFAULT NOW() NOT NULL,
    execute_after TIMESTAMP WITH TIME ZONE DEFAULT NOW() NOT NULL,
    status pgqueuer_status NOT NULL,
    entrypoint TEXT NOT NULL,
    dedupe_key TEXT,
    payload BYTEA,
    headers JSONB,
    attempts INT NOT NULL DEFAULT 0,
    fence_token UUID
);
CREATE INDEX pgqueuer_priority_id_id1_idx ON pgqueuer (priority ASC, id DESC)
    INCLUDE (id) WHERE status = 'queued';
CREATE INDEX pgqueuer_updated_id_id1_idx ON pgqueuer (updated ASC, id DESC)
    INCLUDE (id) WHERE status = 'picked';
CREATE INDEX pgqueuer_queue_manager_id_idx ON pgqueuer (queue_manager_id)
    WHERE queue_manager_id IS NOT NULL;
CREATE INDEX pgqueuer_ep_prio_id_idx ON pgqueuer (entrypoint, priority DESC, id ASC)
    WHERE status = 'queued';
CREATE INDEX pgqueuer_ep_ea_idx ON pgqueuer (entrypoint, execute_after)
    WHERE status = 'queued';
CREATE UNIQUE INDEX IF NOT EXISTS pgqueuer_unique_dedupe_key ON
    pgqueuer (dedupe_key) WHERE ((status IN ('queued', 'picked') AND dedupe_key IS NOT NULL));

CREATE TABLE pgqueuer_log (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    created TIMESTAMP WITH TIME ZONE DEFAULT NOW() NOT NULL,
    job_id BIGINT NOT NULL,
    status pgqueuer_status NOT NULL,
    priority INT NOT NULL,
    entrypoint TEXT NOT NULL,
    traceback JSONB DEFAULT NULL,
    aggregated BOOLEAN DEFAULT FALSE
);
CREATE INDEX pgqueuer_log_not_aggregated ON pgqueuer_log ((1)) WHERE not aggregated;
CREATE INDEX pgqueuer_log_created ON pgqueuer_log (created);
CREATE INDEX pgqueuer_log_status ON pgqueuer_log (status);
CREATE INDEX pgqueuer_log_job_id_status ON pgqueuer_log (job_id, created DESC);

-- name: enqueue
WITH input AS MATERIALIZED (
    SELECT
        nextval(
            (SELECT pg_get_serial_sequence('pgqueuer', 'id'))
        ) AS id,
        priority, entrypoint, payload, execute_after, dedupe_key, headers, ord
    FROM UNNEST(
        ARRAY[0]::int[], ARRAY['outbox.relay']::text[],
        ARRAY[convert_to(@event_id::text, 'UTF8')]::bytea[],
        ARRAY[interval '0 seconds']::interval[], ARRAY[NULL]::text[], ARRAY[NULL]::jsonb[]
    ) WITH ORDINALITY AS
        t(priority, entrypoint, payload, execute_after, dedupe_key, headers, ord)
),
inserted AS (
    INSERT INTO pgqueuer
    (id, priority, entrypoint, payload, execute_after, dedupe_key, headers, status)
    SELECT id, priority, entrypoint, payload, execute_after + NOW(),
        dedupe_key, headers, 'queued'
    FROM input
    RETURNING id, entrypoint, priority
),
logged AS (
    INSERT INTO pgqueuer_log
    (job_id, status, entrypoint, priority)
    SELECT id, 'queued', entrypoint, priority
    FROM inserted
)
SELECT i.ord AS ord, ins.id AS id
FROM inserted ins
JOIN input i ON i.id = ins.id
ORDER BY i.ord

-- name: claim
WITH
params AS (
    SELECT
        UNNEST(ARRAY['outbox.relay']::text[])   AS entrypoint,
        UNNEST(ARRAY[0]::bigint[]) AS concurrency_limit
),
picked AS (
    SELECT entrypoint, COUNT(*) AS total
    FROM pgqueuer
    WHERE queue_manager_id IS NOT NULL
      AND entrypoint = ANY(ARRAY['outbox.relay']::text[])
    GROUP BY entrypoint
),
worker_load AS (
    SELECT COUNT(*) AS total
    FROM pgqueuer
    WHERE queue_manager_id = md5(@worker::text)::uuid
      AND entrypoint = ANY(ARRAY['outbox.relay']::text[])
),
available AS (
    SELECT
        p.entrypoint,
        CASE
            WHEN p.concurrency_limit <= 0 THEN NULL
            ELSE p.concurrency_limit - COALESCE(pk.total, 0)
        END AS remaining
    FROM params p
    LEFT JOIN picked pk ON pk.entrypoint = p.entrypoint
    WHERE p.concurrency_limit <= 0
       OR COALESCE(pk.total, 0) < p.concurrency_limit
),
next_queued AS (
    SELECT q.id, q.priority
    FROM available a
    CROSS JOIN LATERAL (
        SELECT q2.id, q2.priority
        FROM pgqueuer q2
        WHERE q2.entrypoint = a.entrypoint
          AND q2.status = 'queued'
          AND q2.execute_after < NOW()
        ORDER BY q2.priority DESC, q2.id ASC
        LIMIT a.remaining
    ) q
    WHERE (9223372036854775807::BIGINT IS NULL
           OR (SELECT total FROM worker_load) < 9223372036854775807::BIGINT)
    ORDER BY q.priority DESC, q.id ASC
),
next_stale AS (
    SELECT q.id, q.priority
    FROM pgqueuer q
    JOIN params p ON p.entrypoint = q.entrypoint
    WHERE q.status = 'picked'
      AND q.heartbeat < NOW() - interval '30 seconds'
      AND q.execute_after < NOW()
      AND q.attempts < 2
      AND (9223372036854775807::BIGINT IS NULL
           OR (SELECT total FROM worker_load) < 9223372036854775807::BIGINT)
    ORDER BY q.priority DESC, q.id ASC
),
eligible AS (
    -- lock only the rows this dequeue takes (candidates above unlocked and unlimited); their predicates
    -- repeated here, where FOR UPDATE re-checks them on a row another dequeue took since the snapshot
    SELECT q.id FROM pgqueuer q
    WHERE q.id IN (
        SELECT id FROM next_queued
        UNION ALL
        SELECT id FROM next_stale
    )
      AND q.execute_after < NOW()
      AND (q.status = 'queued'
           OR (q.status = 'picked' AND q.heartbeat < NOW() - interval '30 seconds' AND q.attempts < 2))
    ORDER BY q.priority DESC, q.id ASC
    LIMIT GREATEST(LEAST(3, COALESCE(9223372036854775807::BIGINT - (SELECT total FROM worker_load), 3)), 0)
    FOR UPDATE OF q SKIP LOCKED
),
claimed AS (
    UPDATE pgqueuer
    SET status = 'picked',
        updated   = NOW(),
        heartbeat = NOW(),
        queue_manager_id = md5(@worker::text)::uuid,
        attempts = attempts + 1,
        fence_token = gen_random_uuid()
    WHERE id IN (SELECT id FROM eligible)
    RETURNING *
),
log_pick AS (
    INSERT INTO pgqueuer_log (job_id, status, entrypoint, priority)
    SELECT id, status, entrypoint, priority FROM claimed
),
stale_exhausted AS (
    -- a stale job whose last attempt (attempts = 2) was abandoned: on_failure='hold', as 'failed'
    SELECT q.id
    FROM pgqueuer q
    JOIN params p ON p.entrypoint = q.entrypoint
    WHERE q.status = 'picked'
      AND q.heartbeat < NOW() - interval '30 seconds'
      AND q.attempts >= 2
    FOR UPDATE SKIP LOCKED
),
held AS (
    UPDATE pgqueuer
    SET status = 'failed', updated = NOW(), queue_manager_id = NULL
    WHERE id IN (SELECT id FROM stale_exhausted)
    RETURNING id, entrypoint, priority
),
held_log AS (
    INSERT INTO pgqueuer_log (job_id, status, entrypoint, priority, traceback)
    SELECT id, 'failed', entrypoint, priority, NULL::JSONB FROM held
)
SELECT id, convert_from(payload, 'UTF8') AS event_id, fence_token AS generation
FROM claimed ORDER BY priority DESC, id ASC

-- name: complete
WITH job_status AS (
    SELECT
        UNNEST(ARRAY[@id::bigint]::bigint[])                AS id,
        UNNEST(ARRAY['successful']::pgqueuer_status[])      AS status,
        UNNEST(ARRAY[NULL]::JSONB[])                        AS traceback
), deleted AS (
    DELETE FROM pgqueuer
    WHERE id = ANY(SELECT js.id FROM job_status js WHERE js.status != 'failed')
      AND status = 'picked' AND fence_token = @generation::uuid
    RETURNING id, entrypoint, priority
), held AS (
    UPDATE pgqueuer
    SET status = 'failed', updated = NOW(), queue_manager_id = NULL
    WHERE id = ANY(SELECT js.id FROM job_status js WHERE js.status = 'failed')
    RETURNING id, entrypoint, priority
), all_resolved AS (
    SELECT id, entrypoint, priority FROM deleted
    UNION ALL
    SELECT id, entrypoint, priority FROM held
), merged AS (
    SELECT
        job_status.id           AS id,
        job_status.status       AS status,
        job_status.traceback    AS traceback,
        all_resolved.entrypoint AS entrypoint,
        all_resolved.priority   AS priority
    FROM job_status
    INNER JOIN all_resolved
        ON all_resolved.id = job_status.id
)
INSERT INTO pgqueuer_log (
    job_id,
    status,
    entrypoint,
    priority,
    traceback
)
SELECT id, status, entrypoint, priority, traceback FROM merged
RETURNING job_id AS id

-- name: retry
WITH retry AS (
    -- DatabaseRetryEntrypointExecutor(max_attempts=1): a retry while this was the first claim (attempts < 2)
    UPDATE pgqueuer
    SET
        status = 'queued',
        execute_after = NOW() + interval '60 seconds',
        updated = NOW(),
        queue_manager_id = NULL
    WHERE id = @id::bigint
      AND status = 'picked' AND fence_token = @generation::uuid
      AND attempts < 2
    RETURNING id, entrypoint, priority
), retry_log AS (
    INSERT INTO pgqueuer_log (job_id, status, entrypoint, priority, traceback)
    SELECT id, 'queued', entrypoint, priority, NULL::JSONB FROM retry
    RETURNING job_id
), held AS (
    -- attempts >= 2 (the second claim): the exception propagates; on_failure='hold' logs it as 'failed'
    UPDATE pgqueuer
    SET status = 'failed', updated = NOW(), queue_manager_id = NULL
    WHERE id = @id::bigint
      AND status = 'picked' AND fence_token = @generation::uuid
      AND attempts >= 2
    RETURNING id, entrypoint, priority
), held_log AS (
    INSERT INTO pgqueuer_log (job_id, status, entrypoint, priority, traceback)
    SELECT id, 'failed', entrypoint, priority, NULL::JSONB FROM held
    RETURNING job_id
)
SELECT job_id AS id FROM retry_log
UNION ALL
SELECT job_id AS id FROM held_log

-- name: renew
UPDATE pgqueuer SET heartbeat = NOW() WHERE id = ANY(ARRAY[@id::bigint]::bigint[])
  AND status = 'picked' AND fence_token = @generation::uuid
RETURNING id

-- name: state
SELECT id, convert_from(payload, 'UTF8') AS event_id,
       CASE status WHEN 'queued' THEN 'READY'
                   WHEN 'picked' THEN 'INPROGRESS'
                   WHEN 'failed' THEN 'DEAD'
                   ELSE status::text END AS status,
       fence_token AS generation,
       CASE WHEN status <> 'picked' THEN NULL
            ELSE heartbeat < now() - interval '30 seconds' END AS lease_expired,
       execute_after < now() AS due
FROM pgqueuer ORDER BY id

-- name: expire
UPDATE pgqueuer SET heartbeat = now() - interval '1 hour'
WHERE id = @id AND status = 'picked'

-- name: due
UPDATE pgqueuer SET execute_after = now() - interval '1 second'
WHERE id = @id AND status = 'queued'

-- name: age
UPDATE pgqueuer SET heartbeat = heartbeat - make_interval(secs => @seconds)
WHERE id = @id AND status = 'picked'
