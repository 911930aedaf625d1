-- Token variant (issue 23) of testdata/libraries/fixed/oban.sql, for the
-- topologies that forget (docs/topologies.md, docs/libraries.md). What changed:
-- a uuid column of ours, oban_jobs.fence_token, is stamped with
-- gen_random_uuid() by fetch_jobs' UPDATE and returned as the generation;
-- complete_job and error_job/discard_job compare it (o0."fence_token" =
-- @generation::uuid) where the fixed file compared o0."attempt" = @generation.
-- attempt is still Oban's counter and the attempt budget (the fetch still bumps
-- it and still requires attempt < max_attempts). The retry's discard-or-retry
-- decision, backoff and error entry read o0."attempt" instead of @generation,
-- which is now the token; under the token guard that is the attempt the
-- executor's fetch returned. state returns fence_token as generation.
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
-- Fixed: oban (testdata/libraries/oban.sql) with complete_job guarded to the fetched, still-executing attempt: its WHERE adds state = 'executing' AND attempt = @generation. With error_job/discard_job (retry) guarded the same way: its WHERE adds state = 'executing' AND attempt = @generation.
-- Library: Oban (Elixir job queue on PostgreSQL: oban_jobs table, Basic engine, Lifeline rescuer)
-- Repository: https://github.com/oban-bg/oban
-- Commit: 2939e3134d0812195fbfcfe9a8e8d4bbd30bb23b ("Restrict unique warning to insert states only")
-- Version: v2.23.0-51-g2939e313 (51 commits after tag v2.23.0)
-- Sources:
--   lib/oban/migrations/postgres/v01.ex .. v14.ex: oban_job_state enum, oban_jobs table and its
--     constraints (attempt_range, positive_max_attempts, queue_length, worker_length, non_negative_priority)
--   lib/oban/engines/basic.ex: fetch_jobs (claim), complete_job (complete), error_job and
--     discard_job (retry), rescue_jobs (rescue), stage_jobs (what the due fixture imitates)
--   lib/oban/lifeline.ex (lib/oban/plugins/lifeline.ex is a deprecated delegate to it): the Lifeline
--     plugin, rescue_after default 60 minutes, calling Engine.rescue_jobs in one Repo.transaction
--   lib/oban/queues/executor.ex: normalize_state / ack_event (a failure at attempt >= max_attempts is
--     :exhausted and goes to discard_job, else error_job with the worker's backoff)
--   lib/oban/worker.ex: backoff/1 default (15 + 2^attempt seconds, jitter up to +10%); lib/oban/backoff.ex
--   lib/oban/job.ex: max_attempts default 20
--
-- How Oban works: each queue's producer fetches up to its free slots (limit minus running) with one
-- UPDATE over a CTE of 'available' rows taken FOR UPDATE SKIP LOCKED, setting 'executing', stamping
-- attempted_at/attempted_by and bumping `attempt`. There is no lease or heartbeat. When the job
-- returns, the executor acks it with an UPDATE by id alone: complete_job sets 'completed', error_job
-- sets 'retryable' with a backoff, discard_job sets 'discarded' once attempt >= max_attempts; none of
-- them looks at the row's state or attempt. The Stager moves due 'retryable'/'scheduled' rows to
-- 'available'. A job whose node died stays 'executing' until the leader's Lifeline plugin (every minute)
-- rescues it once attempted_at is older than rescue_after (1 hour): back to 'available' while attempts
-- remain, else 'discarded'.
--
-- Adaptations:
--   - The Ecto queries are rendered by hand as the SQL Ecto generates for them (table aliases, the
--     "subset" CTE, update_all's SET list); parameters bound by Ecto are written as constants.
--   - event_id: a text column added to oban_jobs, set by enqueue (Oban's payload is `args` jsonb;
--     enqueue also writes {"event_id": ...} there); worker fixed to 'Outboxlab.Worker'.
--   - Table trimmed to the columns the statements touch (tags, meta, errors kept; cancelled_at kept for
--     the cancelled state); Oban's enum and its CHECK constraints kept. Columns are Oban's
--     utc_datetime_usec (timestamp without time zone, holding UTC).
--   - Application timestamps (utc_now(), DateTime.add(now, -rescue_after), seconds_from_now) replaced by
--     timezone('UTC', now()) and intervals from it.
--   - claim: fetch_jobs with meta.queue = 'default' and demand = 2 (batch=2; Oban's demand is the
--     queue's limit minus running jobs); attempted_by = [node, producer uuid] written as
--     ARRAY[@worker, 'outboxlab-producer']. RETURNING o0.* narrowed to id, event_id and
--     attempt::bigint AS generation: Oban bumps attempt on every fetch, so it is returned as the
--     generation (Oban's acks do not check it).
--   - order=any: the fetch orders by priority, scheduled_at, id, and a retried job's scheduled_at is its
--     backoff time, so it goes behind jobs enqueued after it.
--   - complete: complete_job's update_all has no RETURNING (it returns a count that Oban ignores);
--     RETURNING o0."id" is added to observe it.
--   - retry: the executor's two acks for a failure in one statement: discard_job when the attempt the
--     executor holds (its %Job{} from the fetch, passed as @generation) is >= max_attempts, else
--     error_job with scheduled_at = now + the default backoff 15 + 2^attempt seconds (no jitter). Both
--     are `WHERE id = ^job.id` only, as in Oban; @generation is the value Oban's executor decides with,
--     not a guard. RETURNING o0."id" added.
--   - rescue: Lifeline's Repo.transaction around Basic.rescue_jobs: its two update_all statements in
--     order (rescue_query to 'available', discard_query to 'discarded'), cut = now - 60 minutes.
--   - lease=1h: Lifeline's rescue_after default (:timer.minutes(60)). lease_expired for an executing
--     row is attempted_at < now - 1 hour, rescue_jobs' own test.
--   - policy=lenient: Oban has no lease; an executing job past rescue_after may still be acked until
--     Lifeline or another fetch takes it.
--   - max_attempts=2 (Oban's default is 20), set by enqueue; chosen small so that counterexamples stay
--     short: the budget is spent in two claims.
--   - States: available, scheduled, retryable, suspended -> READY (available is due: the fetch does not
--     look at scheduled_at; scheduled/retryable wait for the Stager); executing -> INPROGRESS;
--     completed -> SENT; discarded, cancelled -> DEAD. The due fixture does the Stager's promotion
--     (stage_jobs: state 'available').
--   - Oban's Pruner deletes old completed/discarded rows after max_age (60s by default) in the
--     background; that is not modelled (done=keep: a completed job stays as 'completed').
-- Fix: complete (complete_job) adds `AND (o0."state" = 'executing') AND (o0."attempt" = @generation::int)`: restores terminal (a duplicate ack no longer rewrites a completed row) and fencing (a stale ack no longer completes a rescued or refetched job).
-- Fix: retry (error_job/discard_job) adds the same guard: restores fencing (a stale error ack no longer moves a rescued or refetched job) and no_stranded_row (a stale ack decided 'retryable' from its old attempt on a job already at max_attempts, which the fetch's attempt < max_attempts then never took again).
-- outboxlab: fence=token
-- outboxlab: order=any
-- outboxlab: batch=2
-- outboxlab: lease=1h
-- outboxlab: policy=lenient
-- outboxlab: max_attempts=2

-- name: schema
CREATE TYPE oban_job_state AS ENUM (
  'available',
  'suspended',
  'scheduled',
  'executing',
  'retryable',
  'completed',
  'discarded',
  'cancelled'
);

CREATE TABLE oban_jobs (
  id bigserial PRIMARY KEY,
  event_id text NOT NULL UNIQUE,
  state oban_job_state NOT NULL DEFAULT 'available',
  queue text NOT NULL DEFAULT 'default',
  worker text NOT NULL,
  args jsonb NOT NULL DEFAULT '{}',
  errors jsonb[] NOT NULL DEFAULT ARRAY[]::jsonb[],
  attempt integer NOT NULL DEFAULT 0,
  fence_token uuid,
  max_attempts integer NOT NULL DEFAULT 20,
  inserted_at timestamp(6) without time zone NOT NULL DEFAULT timezone('UTC', now()),
  scheduled_at timestamp(6) without time zone NOT NULL DEFAULT timezone('UTC', now()),
  attempted_at timestamp(6) without time zone,
  completed_at timestamp(6) without time zone,
  attempted_by text[],
  discarded_at timestamp(6) without time zone,
  priority integer NOT NULL DEFAULT 0,
  tags text[] DEFAULT ARRAY[]::text[],
  meta jsonb DEFAULT '{}',
  cancelled_at timestamp(6) without time zone,
  CONSTRAINT worker_length CHECK (char_length(worker) > 0 AND char_length(worker) < 128),
  CONSTRAINT queue_length CHECK (char_length(queue) > 0 AND char_length(queue) < 128),
  CONSTRAINT positive_max_attempts CHECK (max_attempts > 0),
  CONSTRAINT attempt_range CHECK (attempt between 0 and max_attempts),
  CONSTRAINT non_negative_priority CHECK (priority >= 0)
);

CREATE INDEX oban_jobs_state_queue_priority_scheduled_at_id_index
  ON oban_jobs (state, queue, priority, scheduled_at, id);

-- name: enqueue
INSERT INTO oban_jobs (event_id, worker, args, max_attempts)
VALUES (@event_id, 'Outboxlab.Worker', jsonb_build_object('event_id', @event_id::text), 2)

-- name: claim
WITH "subset" AS (
  SELECT so0."id" AS "id"
  FROM "oban_jobs" AS so0
  WHERE (so0."state" = 'available')
    AND (so0."queue" = 'default')
  ORDER BY so0."priority", so0."scheduled_at", so0."id"
  LIMIT 2
  FOR UPDATE SKIP LOCKED
)
UPDATE "oban_jobs" AS o0
SET "state" = 'executing',
    "attempted_at" = timezone('UTC', now()),
    "attempted_by" = ARRAY[@worker::text, 'outboxlab-producer'],
    "attempt" = o0."attempt" + 1,
    "fence_token" = gen_random_uuid()
FROM "subset" AS f1
WHERE (o0."id" = f1."id")
  AND (o0."attempt" < o0."max_attempts")
RETURNING o0."id", o0."event_id", o0."fence_token" AS generation;

-- name: complete
UPDATE "oban_jobs" AS o0
SET "state" = 'completed', "completed_at" = timezone('UTC', now())
WHERE (o0."id" = @id::bigint)
  AND (o0."state" = 'executing') AND (o0."fence_token" = @generation::uuid)
RETURNING o0."id";

-- name: retry
-- ack_event(:failure): discard_job when the executor's job.attempt >= job.max_attempts
-- (o0."attempt": the fetched attempt whenever the token guard below holds)
-- (normalize_state's :exhausted), else error_job with Worker.backoff/1.
UPDATE "oban_jobs" AS o0
SET "state" = CASE WHEN o0."attempt" >= o0."max_attempts"
                   THEN 'discarded'::oban_job_state ELSE 'retryable'::oban_job_state END,
    "discarded_at" = CASE WHEN o0."attempt" >= o0."max_attempts"
                          THEN timezone('UTC', now()) ELSE o0."discarded_at" END,
    "scheduled_at" = CASE WHEN o0."attempt" >= o0."max_attempts"
                          THEN o0."scheduled_at"
                          ELSE timezone('UTC', now()) + make_interval(secs => 15 + power(2, o0."attempt")) END,
    "errors" = o0."errors" || ARRAY[jsonb_build_object('attempt', o0."attempt",
                                                       'at', timezone('UTC', now()),
                                                       'error', 'outboxlab retry')]
WHERE (o0."id" = @id::bigint)
  AND (o0."state" = 'executing') AND (o0."fence_token" = @generation::uuid)
RETURNING o0."id";

-- name: rescue
UPDATE "oban_jobs" AS o0
SET "state" = 'available'
WHERE ((o0."state" = 'executing') AND (o0."attempted_at" < timezone('UTC', now()) - interval '60 minutes'))
  AND (o0."attempt" < o0."max_attempts")
RETURNING o0."id", o0."queue", o0."state";

UPDATE "oban_jobs" AS o0
SET "state" = 'discarded', "discarded_at" = timezone('UTC', now())
WHERE ((o0."state" = 'executing') AND (o0."attempted_at" < timezone('UTC', now()) - interval '60 minutes'))
  AND (o0."attempt" >= o0."max_attempts")
RETURNING o0."id", o0."queue", o0."state";

-- name: state
SELECT id, event_id,
       CASE state
           WHEN 'available' THEN 'READY'
           WHEN 'scheduled' THEN 'READY'
           WHEN 'retryable' THEN 'READY'
           WHEN 'suspended' THEN 'READY'
           WHEN 'executing' THEN 'INPROGRESS'
           WHEN 'completed' THEN 'SENT'
           WHEN 'discarded' THEN 'DEAD'
           WHEN 'cancelled' THEN 'DEAD'
       END AS status,
       fence_token AS generation,
       CASE WHEN state = 'executing'
            THEN attempted_at < timezone('UTC', now()) - interval '60 minutes' END AS lease_expired,
       (state = 'available') AS due
FROM oban_jobs
ORDER BY id;

-- name: expire
UPDATE oban_jobs SET attempted_at = timezone('UTC', now()) - interval '60 minutes 1 second'
WHERE id = @id AND state = 'executing';

-- name: due
-- The Stager's stage_jobs promotion once scheduled_at has come.
UPDATE oban_jobs
SET scheduled_at = least(scheduled_at, timezone('UTC', now()) - interval '1 second'),
    state = 'available'
WHERE id = @id AND state IN ('scheduled', 'retryable');

-- name: age
UPDATE oban_jobs SET attempted_at = attempted_at - make_interval(secs => @seconds)
WHERE id = @id AND state = 'executing';
