-- Token variant (issue 23) of testdata/libraries/fixed/pg-boss.sql, for the
-- topologies that forget (docs/topologies.md, docs/libraries.md). What changed:
-- a uuid column of ours, job.fence_token, is stamped with
-- gen_random_uuid() by fetchNextJob's UPDATE and returned as the generation;
-- completeJobs, failJobsById (retry) and touchJobs (renew) compare it
-- (fence_token = @generation::uuid) where the fixed file compared retry_count + 1
-- = @generation. failJobs re-inserts the row it deleted with every column, so its
-- INSERTs (in retry and in both supervisor statements of the rescue) carry
-- fence_token too. retry_count is still pg-boss's counter and the attempt budget
-- (the fetch still raises it, retry_limit still decides retry or failed). state
-- returns fence_token as generation.
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
-- Fixed: pg-boss (testdata/libraries/pg-boss.sql) with three changes: complete applies only to the claim's own attempt (retry_count + 1 = @generation). fail (retry) applies only to a job still 'active' at the claim's own attempt, not to a 'created'/'retry' one. touch (renew) applies only at the claim's own attempt and refuses a job whose expire_seconds deadline is less than one heartbeat away, since touch cannot move that deadline.
-- Library: pg-boss (Node.js job queue on PostgreSQL: one job table, state enum, supervisor-driven expiry)
-- Repository: https://github.com/timgit/pg-boss
-- Commit: 55ee32f66f0bf683ff823c0ad8be2056dbc91ce4 ("patch releases for pgboss 12.27"; package.json version 12.27.0)
-- Source files and functions (SQL copied from the query builders at that commit):
--   src/plans.ts createEnumJobState, createTableQueue, createTableJob, createPrimaryKeyJob,
--     createQueueForeignKeyJob, QUEUE_DEFAULTS, JOB_STATES          -> schema
--   src/plans.ts insertJobs (json_to_recordset insert joined to queue) -> enqueue
--   src/plans.ts fetchNextJob (next CTE ... FOR UPDATE OF j SKIP LOCKED, UPDATE ... state='active') -> claim
--   src/plans.ts completeJobs / completeJobsUpdate (includeQueued=false) -> complete
--   src/plans.ts failJobsById -> failJobs -> failJobsBody (delete + re-insert as retry/failed) -> retry
--   src/plans.ts touchJobs (manager.touch, the heartbeat) -> renew
--   src/plans.ts failJobsByTimeout and failJobsByHeartbeat, each wrapped by locked()/advisoryLock(),
--     run by src/boss.ts supervise() every superviseIntervalSeconds -> rescue
--
-- How pg-boss works: fetch takes the highest-priority, oldest jobs in state created/retry whose
-- start_after has passed, locks them with SKIP LOCKED and flips them to 'active', stamping
-- started_on and heartbeat_on and counting a retry on every fetch after the first. complete and
-- fail address jobs by (queue name, id) only: complete marks any 'active' job 'completed'; fail
-- deletes the row and re-inserts it as 'retry' (start_after pushed by retry_delay) while
-- retry_count < retry_limit, else as 'failed'. There is no owner or attempt check in either.
-- Recovery is the supervisor: every superviseIntervalSeconds (60s) it fails 'active' jobs older
-- than expire_seconds (default 15 minutes), or whose heartbeat_on is older than heartbeat_seconds
-- when a heartbeat is configured, through the same delete/re-insert as fail. touch() refreshes
-- heartbeat_on only; it does not move the started_on-based expiry.
--
-- Adaptations:
--   - The queue name parameter ($1 / '${name}' / the queues array) is fixed to the constant 'outbox';
--     ${schema}. qualifiers are dropped (the suite runs in its own schema on search_path).
--   - The job table is created unpartitioned (the noTablePartitioning layout: job itself holds the
--     rows); all of createTableJob's columns are kept; the policy/singleton/fetch indexes and the
--     q_fkey/dlq_fkey foreign keys are left out, they do not change which rows the statements touch.
--   - The queue table is replaced by a view holding the one queue row (createTableQueue's columns
--     that insertJobs and failJobs read): the suite empties every table between checks, which
--     would delete a queue row and make insertJobs' JOIN queue insert nothing.
--   - job.created_on defaults to clock_timestamp() instead of now(): the suite enqueues all events
--     in one transaction, where now() would give them one created_on and fetch's
--     ORDER BY priority desc, created_on, id would fall back to random uuids. (That is real pg-boss
--     behaviour for jobs sent in one transaction; jobs sent separately are ordered by created_on.)
--   - The event id lives in the job's own payload: enqueue passes data = {"event_id": @event_id}
--     through insertJobs' $1 json recordset; claim RETURNING is cut from JOB_COLUMNS_MIN to
--     id, data->>'event_id' AS event_id and the attempt number.
--   - generation = retry_count + 1: fetchNextJob raises retry_count on every fetch after the first
--     (CASE WHEN started_on IS NOT NULL ...), so retry_count + 1 is pg-boss's own attempt number,
--     bumped by one on every claim (exposed as retryCount with includeMetadata). No statement checks it.
--   - complete, retry, renew: $2 ids array = ARRAY[@id::uuid], $3 output = NULL; their
--     SELECT COUNT(*) FROM results is turned into SELECT COUNT(*) > 0 AS applied (one row either way).
--   - batch=2 (fetch's limit = batchSize; pg-boss's default batchSize is 1).
--   - Queue config (one queue row, read by insertJobs): retry_limit=1 (pg-boss's default is 2), so
--     max_attempts=2 (the first run plus retry_limit retries), chosen small so that counterexamples
--     stay short (the budget is spent in two claims); retry_delay=60 instead of the default 0,
--     so that a retried job waits for a backoff as the suite requires (with 0 it is due at once);
--     expire_seconds=900 (the default 15 minutes); heartbeat_seconds=60 (off by default) so that
--     touch() is a real heartbeat.
--   - lease=60s: the lease is the earlier of started_on + expire_seconds and heartbeat_on +
--     heartbeat_seconds, i.e. 60 seconds after a fetch; state's lease_expired uses both tests
--     exactly as failJobsByTimeout/failJobsByHeartbeat do; expire and age move started_on and
--     heartbeat_on back together.
--   - policy=lenient: pg-boss never checks expiry on complete/fail; an expired job stays
--     'active' and completable until the supervisor runs, which is what lenient allows.
--   - rescue = the supervisor's two expiry statements, each preceded by its advisory lock, run
--     in one transaction (pg-boss runs each in its own BEGIN ... COMMIT; the SET LOCAL
--     lock_timeout/idle timeouts of transaction() are left out). The lock key uses schema 'pgboss'.
--   - States: created, retry -> READY; active -> INPROGRESS; completed -> SENT; failed -> DEAD
--     (cancelled is never reached). due = start_after <= now(); the due fixture moves start_after.
--   - Completed jobs stay in the table until the retention/deletion maintenance (days later): done=keep.
-- Fix:
--   - complete (completeJobs): AND retry_count + 1 = @generation -> fencing (a stale owner's complete
--     no longer completes a later attempt of the job after the supervisor failed and a fetch re-took it).
--   - retry (failJobsById): state < 'completed' -> state = 'active', AND retry_count + 1 = @generation ->
--     fencing (a duplicate fail no longer re-fails a job already waiting as 'retry', and a stale owner's
--     fail no longer fails a newer attempt).
--   - renew (touchJobs): AND retry_count + 1 = @generation -> fencing; AND started_on + expire_seconds
--     >= now() + heartbeat_seconds -> one_live_owner (touch refreshes heartbeat_on only, so a touch on a
--     job near or past its expire_seconds deadline granted less than the lease; it is refused instead).
--   No mapping bug found in state/expire/due/age.
-- outboxlab: fence=token
-- outboxlab: order=fifo
-- outboxlab: batch=2
-- outboxlab: lease=60s
-- outboxlab: policy=lenient
-- outboxlab: max_attempts=2

-- name: schema
CREATE TYPE job_state AS ENUM (
  'created',
  'retry',
  'active',
  'completed',
  'cancelled',
  'failed'
);
CREATE VIEW queue AS
SELECT 'outbox'::text AS name, 'standard'::text AS policy,
       1 AS retry_limit, 60 AS retry_delay, false AS retry_backoff, NULL::int AS retry_delay_max,
       900 AS expire_seconds, 1209600 AS retention_seconds, 604800 AS deletion_seconds,
       NULL::text AS dead_letter, false AS partition, 'job'::text AS table_name,
       60 AS heartbeat_seconds;
CREATE TABLE job (
  id uuid not null default gen_random_uuid(),
  name text not null,
  priority integer not null default(0),
  data jsonb,
  state job_state not null default 'created',
  retry_limit integer not null default 2,
  retry_count integer not null default 0,
  retry_delay integer not null default 0,
  retry_backoff boolean not null default false,
  retry_delay_max integer,
  expire_seconds int not null default 900,
  deletion_seconds int not null default 604800,
  singleton_key text,
  singleton_on timestamp without time zone,
  group_id text,
  group_tier text,
  start_after timestamp with time zone not null default now(),
  created_on timestamp with time zone not null default clock_timestamp(),
  started_on timestamp with time zone,
  completed_on timestamp with time zone,
  keep_until timestamp with time zone NOT NULL default now() + interval '1209600',
  output jsonb,
  dead_letter text,
  policy text,
  heartbeat_on timestamp with time zone,
  heartbeat_seconds int,
  blocked boolean not null default false,
  blocking boolean not null default false,
  pending_dependencies int not null default 0,
  source_name text,
  source_id uuid,
  source_created_on timestamp with time zone,
  source_retry_count int,
  fence_token uuid
);
ALTER TABLE job ADD PRIMARY KEY (name, id);

-- name: enqueue
INSERT INTO job (
  id,
  name,
  data,
  priority,
  start_after,
  singleton_key,
  singleton_on,
  group_id,
  group_tier,
  expire_seconds,
  deletion_seconds,
  keep_until,
  retry_limit,
  retry_delay,
  retry_backoff,
  retry_delay_max,
  policy,
  dead_letter,
  heartbeat_seconds,
  blocked,
  blocking,
  pending_dependencies
)
SELECT
  COALESCE(id, gen_random_uuid()) as id,
  'outbox' as name,
  data,
  COALESCE(priority, 0) as priority,
  j.start_after,
  "singletonKey",
  CASE
    WHEN "singletonSeconds" IS NOT NULL THEN 'epoch'::timestamp + '1s'::interval * ("singletonSeconds"::float8 * floor(( date_part('epoch', now()) + COALESCE("singletonOffset",0)::float8) / "singletonSeconds"::float8 ))
    ELSE NULL
    END as singleton_on,
  "groupId" as group_id,
  "groupTier" as group_tier,
  COALESCE("expireInSeconds", q.expire_seconds) as expire_seconds,
  COALESCE("deleteAfterSeconds", q.deletion_seconds) as deletion_seconds,
  j.start_after + (COALESCE("retentionSeconds", q.retention_seconds) * interval '1s') as keep_until,
  COALESCE("retryLimit", q.retry_limit) as retry_limit,
  COALESCE("retryDelay", q.retry_delay) as retry_delay,
  COALESCE("retryBackoff", q.retry_backoff, false) as retry_backoff,
  COALESCE("retryDelayMax", q.retry_delay_max) as retry_delay_max,
  q.policy,
  COALESCE("deadLetter", q.dead_letter) as dead_letter,
  COALESCE("heartbeatSeconds", q.heartbeat_seconds) as heartbeat_seconds,
  COALESCE(blocked, false) as blocked,
  COALESCE(blocking, false) as blocking,
  COALESCE("pendingDependencies", 0) as pending_dependencies
FROM (
  SELECT *,
    CASE
      WHEN right("startAfter", 1) = 'Z' THEN CAST("startAfter" as timestamp with time zone)
      ELSE now() + CAST(COALESCE("startAfter",'0') as interval)
      END as start_after
  FROM json_to_recordset(json_build_array(json_build_object('data', json_build_object('event_id', @event_id::text)))) as x (
    id uuid,
    priority integer,
    data jsonb,
    "startAfter" text,
    "retryLimit" integer,
    "retryDelay" integer,
    "retryDelayMax" integer,
    "retryBackoff" boolean,
    "singletonKey" text,
    "singletonSeconds" integer,
    "singletonOffset" integer,
    "groupId" text,
    "groupTier" text,
    "expireInSeconds" integer,
    "deleteAfterSeconds" integer,
    "retentionSeconds" integer,
    "deadLetter" text,
    "heartbeatSeconds" integer,
    blocked boolean,
    blocking boolean,
    "pendingDependencies" integer
  )
) j
JOIN queue q ON q.name = 'outbox'
ON CONFLICT DO NOTHING
RETURNING id

-- name: claim
WITH
next AS (
  SELECT j.id
  FROM job j
  WHERE j.name = 'outbox'
    AND j.state < 'active'
    AND NOT j.blocked
    AND j.start_after <= now()
  ORDER BY j.priority desc, j.created_on, j.id
  LIMIT 2
  FOR UPDATE OF j SKIP LOCKED
)
UPDATE job j SET
  state = 'active',
  started_on = now(),
  heartbeat_on = now(),
  retry_count = CASE WHEN started_on IS NOT NULL THEN retry_count + 1 ELSE retry_count END,
  fence_token = gen_random_uuid()
FROM next
WHERE name = 'outbox' AND j.id = next.id
RETURNING j.id, j.data->>'event_id' AS event_id, j.fence_token AS generation

-- name: complete
WITH results AS (
  UPDATE job
  SET completed_on = now(),
    state = 'completed',
    output = NULL::jsonb,
    blocked = blocked,
    pending_dependencies = pending_dependencies
  WHERE name = 'outbox'
    AND id = ANY(ARRAY[@id::uuid])
    AND state = 'active'
    AND fence_token = @generation::uuid
  RETURNING 1
)
SELECT COUNT(*) > 0 AS applied FROM results

-- name: retry
WITH deleted_jobs AS (
  DELETE FROM job
  WHERE name = 'outbox' AND id = ANY(ARRAY[@id::uuid]) AND state = 'active' AND fence_token = @generation::uuid
  RETURNING *
),
retried_jobs AS (
  INSERT INTO job (
    id, name, priority, data, state, retry_limit, retry_count, retry_delay, retry_backoff,
    retry_delay_max, start_after, started_on, singleton_key, singleton_on, group_id, group_tier,
    expire_seconds, deletion_seconds, created_on, completed_on, keep_until, policy, output,
    dead_letter, heartbeat_on, heartbeat_seconds, blocked, blocking, pending_dependencies, fence_token
  )
  SELECT
    id,
    name,
    priority,
    data,
    CASE
      WHEN retry_count < retry_limit THEN 'retry'::job_state
      ELSE 'failed'::job_state
      END as state,
    retry_limit,
    retry_count,
    retry_delay,
    retry_backoff,
    retry_delay_max,
    CASE WHEN retry_count = retry_limit THEN start_after
         WHEN NOT retry_backoff THEN now() + retry_delay * interval '1'
         ELSE now() + LEAST(
           retry_delay_max,
           GREATEST(retry_delay, 1) * (
            2 ^ LEAST(16, retry_count + 1) / 2 +
            2 ^ LEAST(16, retry_count + 1) / 2 * random()
           )
         ) * interval '1s'
    END as start_after,
    started_on,
    singleton_key,
    singleton_on,
    group_id,
    group_tier,
    expire_seconds,
    deletion_seconds,
    created_on,
    CASE WHEN retry_count < retry_limit THEN NULL ELSE now() END as completed_on,
    keep_until,
    policy,
    NULL::jsonb,
    dead_letter,
    NULL as heartbeat_on,
    heartbeat_seconds,
    blocked,
    blocking,
    pending_dependencies,
    fence_token
  FROM deleted_jobs
  ON CONFLICT DO NOTHING
  RETURNING *
),
failed_jobs as (
  INSERT INTO job (
    id, name, priority, data, state, retry_limit, retry_count, retry_delay, retry_backoff,
    retry_delay_max, start_after, started_on, singleton_key, singleton_on, group_id, group_tier,
    expire_seconds, deletion_seconds, created_on, completed_on, keep_until, policy, output,
    dead_letter, heartbeat_on, heartbeat_seconds, blocked, blocking, pending_dependencies, fence_token
  )
  SELECT
    id, name, priority, data, 'failed'::job_state as state, retry_limit, retry_count,
    retry_delay, retry_backoff, retry_delay_max, start_after, started_on, singleton_key,
    singleton_on, group_id, group_tier, expire_seconds, deletion_seconds, created_on,
    now() as completed_on, keep_until, policy, NULL::jsonb, dead_letter, NULL as heartbeat_on,
    heartbeat_seconds, blocked, blocking, pending_dependencies, fence_token
  FROM deleted_jobs
  WHERE id NOT IN (SELECT id from retried_jobs)
  RETURNING *
),
results as (
  SELECT * FROM retried_jobs
  UNION ALL
  SELECT * FROM failed_jobs
),
dlq_jobs as (
  INSERT INTO job (name, data, output, retry_limit, retry_backoff, retry_delay, keep_until, deletion_seconds,
    expire_seconds, source_name, source_id, source_created_on, source_retry_count, singleton_key, heartbeat_seconds)
  SELECT
    r.dead_letter, r.data, r.output, q.retry_limit, q.retry_backoff, q.retry_delay,
    now() + q.retention_seconds * interval '1s', q.deletion_seconds, q.expire_seconds,
    r.name, r.id, r.created_on, r.retry_count, r.singleton_key, r.heartbeat_seconds
  FROM results r
    JOIN queue q ON q.name = r.dead_letter
  WHERE state = 'failed'
)
SELECT COUNT(*) > 0 AS applied FROM results

-- name: renew
WITH results AS (
  UPDATE job
  SET heartbeat_on = now()
  WHERE name = 'outbox'
    AND id = ANY(ARRAY[@id::uuid])
    AND state = 'active'
    AND fence_token = @generation::uuid
    AND (started_on + expire_seconds * interval '1s') >= now() + COALESCE(heartbeat_seconds, 0) * interval '1s'
  RETURNING 1
)
SELECT COUNT(*) > 0 AS applied FROM results

-- name: rescue
SELECT pg_advisory_xact_lock(
    ('x' || encode(sha224((current_database() || '.pgboss.pgbossjobfailJobsByTimeout')::bytea), 'hex'))::bit(64)::bigint
);
WITH deleted_jobs AS (
  DELETE FROM job
  WHERE state = 'active'
            AND (started_on + expire_seconds * interval '1s') < now()
            AND name = ANY(ARRAY['outbox']::text[])
  RETURNING *
),
retried_jobs AS (
  INSERT INTO job (
    id, name, priority, data, state, retry_limit, retry_count, retry_delay, retry_backoff,
    retry_delay_max, start_after, started_on, singleton_key, singleton_on, group_id, group_tier,
    expire_seconds, deletion_seconds, created_on, completed_on, keep_until, policy, output,
    dead_letter, heartbeat_on, heartbeat_seconds, blocked, blocking, pending_dependencies, fence_token
  )
  SELECT
    id,
    name,
    priority,
    data,
    CASE
      WHEN retry_count < retry_limit THEN 'retry'::job_state
      ELSE 'failed'::job_state
      END as state,
    retry_limit,
    retry_count,
    retry_delay,
    retry_backoff,
    retry_delay_max,
    CASE WHEN retry_count = retry_limit THEN start_after
         WHEN NOT retry_backoff THEN now() + retry_delay * interval '1'
         ELSE now() + LEAST(
           retry_delay_max,
           GREATEST(retry_delay, 1) * (
            2 ^ LEAST(16, retry_count + 1) / 2 +
            2 ^ LEAST(16, retry_count + 1) / 2 * random()
           )
         ) * interval '1s'
    END as start_after,
    started_on,
    singleton_key,
    singleton_on,
    group_id,
    group_tier,
    expire_seconds,
    deletion_seconds,
    created_on,
    CASE WHEN retry_count < retry_limit THEN NULL ELSE now() END as completed_on,
    keep_until,
    policy,
    '{ "value": { "message": "job timed out" } }'::jsonb,
    dead_letter,
    NULL as heartbeat_on,
    heartbeat_seconds,
    blocked,
    blocking,
    pending_dependencies,
    fence_token
  FROM deleted_jobs
  ON CONFLICT DO NOTHING
  RETURNING *
),
failed_jobs as (
  INSERT INTO job (
    id, name, priority, data, state, retry_limit, retry_count, retry_delay, retry_backoff,
    retry_delay_max, start_after, started_on, singleton_key, singleton_on, group_id, group_tier,
    expire_seconds, deletion_seconds, created_on, completed_on, keep_until, policy, output,
    dead_letter, heartbeat_on, heartbeat_seconds, blocked, blocking, pending_dependencies, fence_token
  )
  SELECT
    id, name, priority, data, 'failed'::job_state as state, retry_limit, retry_count,
    retry_delay, retry_backoff, retry_delay_max, start_after, started_on, singleton_key,
    singleton_on, group_id, group_tier, expire_seconds, deletion_seconds, created_on,
    now() as completed_on, keep_until, policy, '{ "value": { "message": "job timed out" } }'::jsonb, dead_letter, NULL as heartbeat_on,
    heartbeat_seconds, blocked, blocking, pending_dependencies, fence_token
  FROM deleted_jobs
  WHERE id NOT IN (SELECT id from retried_jobs)
  RETURNING *
),
results as (
  SELECT * FROM retried_jobs
  UNION ALL
  SELECT * FROM failed_jobs
),
dlq_jobs as (
  INSERT INTO job (name, data, output, retry_limit, retry_backoff, retry_delay, keep_until, deletion_seconds,
    expire_seconds, source_name, source_id, source_created_on, source_retry_count, singleton_key, heartbeat_seconds)
  SELECT
    r.dead_letter, r.data, r.output, q.retry_limit, q.retry_backoff, q.retry_delay,
    now() + q.retention_seconds * interval '1s', q.deletion_seconds, q.expire_seconds,
    r.name, r.id, r.created_on, r.retry_count, r.singleton_key, r.heartbeat_seconds
  FROM results r
    JOIN queue q ON q.name = r.dead_letter
  WHERE state = 'failed'
)
SELECT COUNT(*) FROM results;
SELECT pg_advisory_xact_lock(
    ('x' || encode(sha224((current_database() || '.pgboss.pgbossjobfailJobsByHeartbeat')::bytea), 'hex'))::bit(64)::bigint
);
WITH deleted_jobs AS (
  DELETE FROM job
  WHERE state = 'active'
            AND heartbeat_seconds IS NOT NULL
            AND (heartbeat_on + heartbeat_seconds * interval '1s') < now()
            AND name = ANY(ARRAY['outbox']::text[])
  RETURNING *
),
retried_jobs AS (
  INSERT INTO job (
    id, name, priority, data, state, retry_limit, retry_count, retry_delay, retry_backoff,
    retry_delay_max, start_after, started_on, singleton_key, singleton_on, group_id, group_tier,
    expire_seconds, deletion_seconds, created_on, completed_on, keep_until, policy, output,
    dead_letter, heartbeat_on, heartbeat_seconds, blocked, blocking, pending_dependencies, fence_token
  )
  SELECT
    id,
    name,
    priority,
    data,
    CASE
      WHEN retry_count < retry_limit THEN 'retry'::job_state
      ELSE 'failed'::job_state
      END as state,
    retry_limit,
    retry_count,
    retry_delay,
    retry_backoff,
    retry_delay_max,
    CASE WHEN retry_count = retry_limit THEN start_after
         WHEN NOT retry_backoff THEN now() + retry_delay * interval '1'
         ELSE now() + LEAST(
           retry_delay_max,
           GREATEST(retry_delay, 1) * (
            2 ^ LEAST(16, retry_count + 1) / 2 +
            2 ^ LEAST(16, retry_count + 1) / 2 * random()
           )
         ) * interval '1s'
    END as start_after,
    started_on,
    singleton_key,
    singleton_on,
    group_id,
    group_tier,
    expire_seconds,
    deletion_seconds,
    created_on,
    CASE WHEN retry_count < retry_limit THEN NULL ELSE now() END as completed_on,
    keep_until,
    policy,
    '{ "value": { "message": "job heartbeat timeout" } }'::jsonb,
    dead_letter,
    NULL as heartbeat_on,
    heartbeat_seconds,
    blocked,
    blocking,
    pending_dependencies,
    fence_token
  FROM deleted_jobs
  ON CONFLICT DO NOTHING
  RETURNING *
),
failed_jobs as (
  INSERT INTO job (
    id, name, priority, data, state, retry_limit, retry_count, retry_delay, retry_backoff,
    retry_delay_max, start_after, started_on, singleton_key, singleton_on, group_id, group_tier,
    expire_seconds, deletion_seconds, created_on, completed_on, keep_until, policy, output,
    dead_letter, heartbeat_on, heartbeat_seconds, blocked, blocking, pending_dependencies, fence_token
  )
  SELECT
    id, name, priority, data, 'failed'::job_state as state, retry_limit, retry_count,
    retry_delay, retry_backoff, retry_delay_max, start_after, started_on, singleton_key,
    singleton_on, group_id, group_tier, expire_seconds, deletion_seconds, created_on,
    now() as completed_on, keep_until, policy, '{ "value": { "message": "job heartbeat timeout" } }'::jsonb, dead_letter, NULL as heartbeat_on,
    heartbeat_seconds, blocked, blocking, pending_dependencies, fence_token
  FROM deleted_jobs
  WHERE id NOT IN (SELECT id from retried_jobs)
  RETURNING *
),
results as (
  SELECT * FROM retried_jobs
  UNION ALL
  SELECT * FROM failed_jobs
),
dlq_jobs as (
  INSERT INTO job (name, data, output, retry_limit, retry_backoff, retry_delay, keep_until, deletion_seconds,
    expire_seconds, source_name, source_id, source_created_on, source_retry_count, singleton_key, heartbeat_seconds)
  SELECT
    r.dead_letter, r.data, r.output, q.retry_limit, q.retry_backoff, q.retry_delay,
    now() + q.retention_seconds * interval '1s', q.deletion_seconds, q.expire_seconds,
    r.name, r.id, r.created_on, r.retry_count, r.singleton_key, r.heartbeat_seconds
  FROM results r
    JOIN queue q ON q.name = r.dead_letter
  WHERE state = 'failed'
)
SELECT COUNT(*) FROM results;

-- name: state
SELECT id, data->>'event_id' AS event_id,
       CASE state WHEN 'created' THEN 'READY'
                  WHEN 'retry' THEN 'READY'
                  WHEN 'active' THEN 'INPROGRESS'
                  WHEN 'completed' THEN 'SENT'
                  WHEN 'failed' THEN 'DEAD'
                  WHEN 'cancelled' THEN 'DEAD' END AS status,
       fence_token AS generation,
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
