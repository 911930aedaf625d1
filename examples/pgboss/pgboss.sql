-- Harness side of pg-boss 12.38.1's own code run as a worker (worker.mjs):
--   outboxlab check --worker 'node examples/pgboss/worker.mjs' examples/pgboss/pgboss.sql
--   outboxlab check --worker 'node examples/pgboss/worker.mjs --unfenced' examples/pgboss/pgboss.sql
-- The worker installs pg-boss with its own start() (the install feature), so this file has no
-- schema section, and claims, settles and supervises through pg-boss's API, so it has no claim,
-- complete, retry, renew or rescue section. What is left is the suite's side: how an event
-- becomes a job, how pg-boss's job table reads as the suite's four states, and the fixtures that
-- stand for time passing, written against the tables pg-boss's migrations create (job, the
-- partitioned parent, whose rows for an unpartitioned queue live in job_common; queue).
--
-- Queue settings, made by the worker's createQueue('outbox', ...): retryLimit 1, retryDelay 600,
-- expireInSeconds 900, heartbeatSeconds 120 (worker.mjs says why).
--   - max_attempts=2: retryLimit 1 is one retry after the first run; fetch raises retry_count on
--     every fetch after the first, abandoned ones too, and fail() and the supervisor's expiry make a
--     job 'failed' once retry_count reaches retry_limit.
--   - lease=2m: the earlier of started_on + 900 s (failJobsByTimeout) and heartbeat_on + 120 s
--     (failJobsByHeartbeat); touch() moves heartbeat_on only.
--   - policy=lenient: neither complete() nor fail() looks at the lease; an expired job stays
--     'active' and finishable until a supervise pass fails it.
--   - batch=2: fetch's batchSize (pg-boss's default is 1).
--   - order=fifo: fetch orders by priority desc, created_on; enqueue stamps each job's created_on
--     with clock_timestamp(), so jobs the suite sends in one transaction keep their order (pg-boss's
--     send() stamps job_now(), one value per transaction, and ties then fall back to index order).
-- States: created, retry -> READY; active -> INPROGRESS; completed -> SENT; failed, cancelled ->
-- DEAD. generation = retry_count + 1 once fetched (pg-boss's attempt number, as the worker's claim
-- reports it). Completed jobs stay until retention (days): done=keep.
-- outboxlab: order=fifo
-- outboxlab: batch=2
-- outboxlab: lease=2m
-- outboxlab: policy=lenient
-- outboxlab: max_attempts=2

-- name: enqueue
-- What send() writes for a job with no options of its own: the queue's settings copied onto it.
INSERT INTO job (name, data, created_on, expire_seconds, deletion_seconds, keep_until,
                 retry_limit, retry_delay, retry_backoff, retry_delay_max, policy, dead_letter,
                 heartbeat_seconds)
SELECT q.name, jsonb_build_object('event_id', @event_id::text), clock_timestamp(),
       q.expire_seconds, q.deletion_seconds, now() + q.retention_seconds * interval '1s',
       q.retry_limit, q.retry_delay, q.retry_backoff, q.retry_delay_max, q.policy, q.dead_letter,
       q.heartbeat_seconds
FROM queue q
WHERE q.name = 'outbox'
RETURNING id

-- name: state
SELECT id, data->>'event_id' AS event_id,
       CASE state WHEN 'created' THEN 'READY'
                  WHEN 'retry' THEN 'READY'
                  WHEN 'active' THEN 'INPROGRESS'
                  WHEN 'completed' THEN 'SENT'
                  ELSE 'DEAD' END AS status,
       CASE WHEN started_on IS NULL THEN 0 ELSE retry_count + 1 END::bigint AS generation,
       CASE WHEN state <> 'active' THEN NULL
            ELSE (started_on + expire_seconds * interval '1s') < now()
              OR (heartbeat_seconds IS NOT NULL
                  AND (heartbeat_on + heartbeat_seconds * interval '1s') < now()) END AS lease_expired,
       start_after <= now() AS due
FROM job
WHERE name = 'outbox'
ORDER BY created_on, id

-- name: expire
UPDATE job
SET started_on = now() - (expire_seconds + 60) * interval '1s',
    heartbeat_on = now() - (COALESCE(heartbeat_seconds, 0) + 60) * interval '1s'
WHERE name = 'outbox' AND id = @id AND state = 'active'

-- name: due
UPDATE job SET start_after = now() - interval '1 minute'
WHERE name = 'outbox' AND id = @id AND state < 'active'

-- name: age
UPDATE job
SET started_on = started_on - make_interval(secs => @seconds),
    heartbeat_on = heartbeat_on - make_interval(secs => @seconds)
WHERE name = 'outbox' AND id = @id AND state = 'active'

-- name: reset
-- The jobs go; the queue row and pg-boss's version and settings stay (the worker reads them).
-- One statement: its data-modifying CTEs run with it.
WITH dependencies AS (DELETE FROM job_dependency),
     stamps AS (UPDATE queue SET monitor_claim_on = NULL, monitor_on = NULL, maintain_on = NULL
                WHERE name = 'outbox')
DELETE FROM job WHERE name = 'outbox'
