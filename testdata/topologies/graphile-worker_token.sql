-- Token variant (issue 23) of testdata/libraries/fixed/graphile-worker.sql, for the
-- topologies that forget (docs/topologies.md, docs/libraries.md). What changed:
-- a uuid column of ours, _private_jobs.fence_token, is stamped with
-- gen_random_uuid() by the fetch (get_job's UPDATE) and returned as the
-- generation; complete (the delete) and fail (retry) compare it (fence_token =
-- @generation::uuid) where the fixed file compared attempts = @generation. The
-- locked_by = @worker check stays. attempts is still graphile-worker's counter and
-- the attempt budget (the fetch still bumps it; is_available still needs attempts
-- < max_attempts). state returns fence_token as generation.
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
-- Fixed: graphile-worker (testdata/libraries/graphile-worker.sql) with two changes: complete deletes the job only while it is still locked by the completing pool at the claim's own attempt (locked_by = @worker and attempts = @generation). fail (retry) also checks the claim's own attempt (attempts = @generation) besides its existing locked_by check.
-- Library: graphile-worker (Node.js job queue on PostgreSQL: jobs table with locked_at/locked_by, delete on success, 4-hour stale-lock reset)
-- Repository: https://github.com/graphile/worker
-- Commit: abfb4cff30747ad423046d117dfb88470f03ae00 ("Merge branch '0.17.x'"; package.json version 0.17.3, git describe v0.17.3-121-gabfb4cf)
-- Source files and queries (SQL copied from these files at that commit):
--   sql/000011.sql create table jobs / job_queues / tasks, create type job_spec (renamed to
--     _private_* by sql/000016.sql; job_spec attributes made smallint by sql/000013.sql) -> schema
--   sql/000018.sql functions add_job and add_jobs (called by enqueue)                -> schema, enqueue
--   src/sql/getJobs.ts batchGetJobs (named-queue strategy 2, no flags, now())        -> claim
--   src/sql/completeJobs.ts batchCompleteJobs, the single job-without-queue delete    -> complete
--   src/sql/failJobs.ts batchFailJobs, the jobs-without-queues update                  -> retry
--   src/sql/resetLockedAt.ts resetLockedAt (run by src/main.ts every 8-10 minutes,
--     minResetLockedInterval/maxResetLockedInterval in src/config.ts)                   -> rescue
--
-- How graphile-worker works: a worker pool fetches jobs that are available (a generated column:
-- locked_at is null and attempts < max_attempts) and due (run_at <= now()), in priority, run_at
-- order, with FOR UPDATE SKIP LOCKED, and stamps them with attempts + 1, locked_by = the pool's id
-- and locked_at = now(). Success deletes the job row by id, with no check of who holds it. Failure
-- unlocks the job (only where locked_by is the failing pool) and pushes run_at back by
-- exp(min(attempts, 10)) seconds; a job whose attempts reached max_attempts is then permanently
-- failed: it stays in the table unlocked and never available again. There is no heartbeat: a lock
-- held by a crashed worker is only cleared by resetLockedAt, which every 8-10 minutes unlocks jobs
-- (and named queues) locked more than 4 hours ago.
--
-- Adaptations:
--   - The ${escapedWorkerSchema}. / :GRAPHILE_WORKER_SCHEMA. qualifiers are dropped (the suite runs in
--     its own schema on search_path); the tables are created in their final shape and names
--     (000011 + the 000016 renames), without the "enable row level security" lines.
--   - The pool id ($1 poolId, locked_by) is the acting worker's name @worker; the task id list
--     ($2::int[], looked up by getTaskDetails) is ARRAY(SELECT id FROM _private_tasks WHERE
--     identifier = 'outbox'): one task, 'outbox'.
--   - The event id lives in the job's own payload: enqueue calls the library's add_job('outbox',
--     json_build_object('event_id', @event_id), max_attempts => 2); claim returns
--     payload->>'event_id' AS event_id instead of RETURNING *.
--   - generation = attempts: the claim raises attempts by one on every fetch (nothing else raises it);
--     neither complete nor fail checks it.
--   - complete: the library's "delete ... where id = $1::bigint" with RETURNING id added (it has
--     none); graphile-worker deletes completed jobs, so done=delete and the state query cannot see
--     completed jobs at all.
--   - retry: batchFailJobs' statement for jobs without a named queue, with $2 =
--     json_build_array(json_build_object('jobId', @id, 'message', 'outboxlab retry')) and
--     RETURNING id added.
--   - batch=2 (batchGetJobs' LIMIT batchSize; graphile-worker fetches 1 at a time by default, more
--     with localQueue.size).
--   - max_attempts=2 is set per job through add_job (graphile-worker's default is 25), chosen small
--     so that counterexamples stay short: the budget is spent in two claims.
--   - Backoff: batchFailJobs pushes run_at back by exp(least(attempts, 10)) seconds; here by as many
--     minutes ('1 minute' for '1 second'). A first attempt's e^1 = 2.7 s backoff ends by the wall clock
--     inside a check that restarts a server or waits out a lost request, and the suite ends backoffs
--     only through its due fixture: a row found due that nothing made due read as a rejected retry that
--     changed it. (examples/graphile-worker, which runs the library's own code, keeps its seconds and
--     enqueues each job with 6 of 8 attempts spent instead, so its first backoff is e^7 s.)
--   - lease=4h: the library's stale-lock age in resetLockedAt; there is no heartbeat, so no renew.
--   - policy=lenient: nothing checks lock age on complete or fail; an expired lock is still
--     honoured until resetLockedAt clears it.
--   - order=any: the claim orders by priority asc, run_at asc, not by insertion; a failed job's
--     run_at is moved (and the suite enqueues every event in one transaction, where add_job gives
--     them all run_at = now(), a tie with no tie-breaker), so enqueue order is not promised.
--   - Named queues are not used (job_queue_id is null), but the claim keeps strategy 2's queue
--     clause and its _private_job_queues update, and the rescue keeps its job_queues update.
--   - States: locked_at not null -> INPROGRESS (lease_expired = locked_at < now() - 4 hours, the
--     rescue's own test); locked_at null and attempts >= max_attempts -> DEAD (permanently failed);
--     otherwise READY (due = run_at <= now()); a deleted (completed) job is absent -> SENT.
-- Fix:
--   - complete (batchCompleteJobs' delete): AND locked_by = @worker AND attempts = @generation ->
--     fencing (a stale pool's complete no longer deletes a job resetLockedAt unlocked or another
--     fetch re-took) and terminal (it no longer deletes a permanently failed job).
--   - retry (batchFailJobs): AND attempts = @generation -> fencing and terminal (a pool's stale fail
--     of an earlier attempt no longer fails the same pool's newer attempt of the job, which could
--     make it permanently failed under a live claim).
--   No mapping bug found in state/expire/due/age.
-- outboxlab: fence=token
-- outboxlab: order=any
-- outboxlab: batch=2
-- outboxlab: lease=4h
-- outboxlab: policy=lenient
-- outboxlab: max_attempts=2
-- outboxlab: done=delete

-- name: schema
create table _private_job_queues (
  id int primary key generated always as identity,
  queue_name text not null unique check (length(queue_name) <= 128),
  locked_at timestamptz,
  locked_by text,
  is_available boolean generated always as ((locked_at is null)) stored not null
);
create table _private_tasks (
  id int primary key generated always as identity,
  identifier text not null unique check (length(identifier) <= 128)
);
create table _private_jobs (
  id bigint primary key generated always as identity,
  job_queue_id int null, -- not adding 'references' to eke out more performance
  task_id int not null,
  payload json default '{}'::json not null,
  priority smallint default 0 not null,
  run_at timestamptz default now() not null,
  attempts smallint default 0 not null,
  max_attempts smallint default 25 not null constraint jobs_max_attempts_check check (max_attempts >= 1),
  last_error text,
  created_at timestamptz default now() not null,
  updated_at timestamptz default now() not null,
  key text unique constraint jobs_key_check check (length(key) > 0 and length(key) <= 512),
  locked_at timestamptz,
  locked_by text,
  revision integer default 0 not null,
  fence_token uuid,
  flags jsonb,
  is_available boolean generated always as (((locked_at is null) and (attempts < max_attempts))) stored not null
);
create index jobs_main_index
  on _private_jobs
  using btree (priority, run_at)
  include (id, task_id, job_queue_id)
  where (is_available = true);
create index jobs_no_queue_index
  on _private_jobs
  using btree (priority, run_at)
  include (id, task_id)
  where (is_available = true and job_queue_id is null);
create type job_spec as (
  identifier text,
  payload json,
  queue_name text,
  run_at timestamptz,
  max_attempts smallint,
  job_key text,
  priority smallint,
  flags text[]
);
CREATE OR REPLACE FUNCTION add_job(identifier text, payload json DEFAULT NULL::json, queue_name text DEFAULT NULL::text, run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, max_attempts integer DEFAULT NULL::integer, job_key text DEFAULT NULL::text, priority integer DEFAULT NULL::integer, flags text[] DEFAULT NULL::text[], job_key_mode text DEFAULT 'replace'::text) RETURNS _private_jobs
    LANGUAGE plpgsql
    AS $$
declare
  v_job _private_jobs;
begin
  if (job_key is null or job_key_mode is null or job_key_mode in ('replace', 'preserve_run_at')) then
    select * into v_job
    from add_jobs(
      ARRAY[(
        identifier,
        payload,
        queue_name,
        run_at,
        max_attempts::smallint,
        job_key,
        priority::smallint,
        flags
      )::job_spec],
      (job_key_mode = 'preserve_run_at')
    )
    limit 1;
    return v_job;
  elsif job_key_mode = 'unsafe_dedupe' then
    -- Ensure all the tasks exist
    insert into _private_tasks as tasks (identifier)
    values (add_job.identifier)
    on conflict do nothing;
    -- Ensure all the queues exist
    if add_job.queue_name is not null then
      insert into _private_job_queues as job_queues (queue_name)
      values (add_job.queue_name)
      on conflict do nothing;
    end if;
    -- Insert job, but if one already exists then do nothing, even if the
    -- existing job has already started (and thus represents an out-of-date
    -- world state). This is dangerous because it means that whatever state
    -- change triggered this add_job may not be acted upon (since it happened
    -- after the existing job started executing, but no further job is being
    -- scheduled), but it is useful in very rare circumstances for
    -- de-duplication. If in doubt, DO NOT USE THIS.
    insert into _private_jobs as jobs (
      job_queue_id,
      task_id,
      payload,
      run_at,
      max_attempts,
      key,
      priority,
      flags
    )
      select
        job_queues.id,
        tasks.id,
        coalesce(add_job.payload, '{}'::json),
        coalesce(add_job.run_at, now()),
        coalesce(add_job.max_attempts::smallint, 25::smallint),
        add_job.job_key,
        coalesce(add_job.priority::smallint, 0::smallint),
        (
          select jsonb_object_agg(flag, true)
          from unnest(add_job.flags) as item(flag)
        )
      from _private_tasks as tasks
      left join _private_job_queues as job_queues
      on job_queues.queue_name = add_job.queue_name
      where tasks.identifier = add_job.identifier
    on conflict (key)
      -- Bump the updated_at so that there's something to return
      do update set
        revision = jobs.revision + 1,
        updated_at = now()
      returning *
      into v_job;
    if v_job.revision = 0 then
      perform pg_notify('jobs:insert', '{"r":' || random()::text || ',"count":1}');
    end if;
    return v_job;
  else
    raise exception 'Invalid job_key_mode value, expected ''replace'', ''preserve_run_at'' or ''unsafe_dedupe''.' using errcode = 'GWBKM';
  end if;
end;
$$;

CREATE OR REPLACE FUNCTION add_jobs(specs job_spec[], job_key_preserve_run_at boolean DEFAULT false) RETURNS SETOF _private_jobs
    LANGUAGE plpgsql
    AS $$
begin
  -- Ensure all the tasks exist
  insert into _private_tasks as tasks (identifier)
  select distinct spec.identifier
  from unnest(specs) spec
  on conflict do nothing;
  -- Ensure all the queues exist
  insert into _private_job_queues as job_queues (queue_name)
  select distinct spec.queue_name
  from unnest(specs) spec
  where spec.queue_name is not null
  on conflict do nothing;
  -- Ensure any locked jobs have their key cleared - in the case of locked
  -- existing job create a new job instead as it must have already started
  -- executing (i.e. it's world state is out of date, and the fact add_job
  -- has been called again implies there's new information that needs to be
  -- acted upon).
  update _private_jobs as jobs
  set
    key = null,
    attempts = jobs.max_attempts,
    updated_at = now()
  from unnest(specs) spec
  where spec.job_key is not null
  and jobs.key = spec.job_key
  and is_available is not true;

  -- WARNING: this count is not 100% accurate; 'on conflict' clause will cause it to be an overestimate
  perform pg_notify('jobs:insert', '{"r":' || random()::text || ',"count":' || array_length(specs, 1)::text || '}');

  -- TODO: is there a risk that a conflict could occur depending on the
  -- isolation level?
  return query insert into _private_jobs as jobs (
    job_queue_id,
    task_id,
    payload,
    run_at,
    max_attempts,
    key,
    priority,
    flags
  )
    select
      job_queues.id,
      tasks.id,
      coalesce(spec.payload, '{}'::json),
      coalesce(spec.run_at, now()),
      coalesce(spec.max_attempts, 25),
      spec.job_key,
      coalesce(spec.priority, 0),
      (
        select jsonb_object_agg(flag, true)
        from unnest(spec.flags) as item(flag)
      )
    from unnest(specs) spec
    inner join _private_tasks as tasks
    on tasks.identifier = spec.identifier
    left join _private_job_queues as job_queues
    on job_queues.queue_name = spec.queue_name
  on conflict (key) do update set
    job_queue_id = excluded.job_queue_id,
    task_id = excluded.task_id,
    payload =
      case
      when json_typeof(jobs.payload) = 'array' and json_typeof(excluded.payload) = 'array' then
        (jobs.payload::jsonb || excluded.payload::jsonb)::json
      else
        excluded.payload
      end,
    max_attempts = excluded.max_attempts,
    run_at = (case
      when job_key_preserve_run_at is true and jobs.attempts = 0 then jobs.run_at
      else excluded.run_at
    end),
    priority = excluded.priority,
    revision = jobs.revision + 1,
    flags = excluded.flags,
    -- always reset error/retry state
    attempts = 0,
    last_error = null,
    updated_at = now()
  where jobs.locked_at is null
  returning *;
end;
$$;

-- name: enqueue
select id from add_job('outbox', json_build_object('event_id', @event_id::text), max_attempts => 2)

-- name: claim
with j as (
  select jobs.job_queue_id, jobs.priority, jobs.run_at, jobs.id
    from _private_jobs as jobs
    where jobs.is_available = true
    and run_at <= now()
    and task_id = any(ARRAY(SELECT id FROM _private_tasks WHERE identifier = 'outbox'))
    and (
      jobs.job_queue_id is null
      or
      jobs.job_queue_id in (
        select id
        from _private_job_queues as job_queues
        where job_queues.is_available = true
        for update
        skip locked
      )
    )
    order by priority asc, run_at asc
    limit 2
    for update
    skip locked
),
q as (
  update _private_job_queues as job_queues
    set
      locked_by = @worker::text,
      locked_at = now()
    from j
    where job_queues.id = j.job_queue_id
)
  update _private_jobs as jobs
    set
      attempts = jobs.attempts + 1,
      locked_by = @worker::text,
      locked_at = now(),
      fence_token = gen_random_uuid()
    from j
    where jobs.id = j.id
    returning jobs.id, jobs.payload->>'event_id' AS event_id, jobs.fence_token AS generation

-- name: complete
delete from _private_jobs as jobs
where id = @id::bigint and locked_by = @worker::text and fence_token = @generation::uuid
returning id

-- name: retry
update _private_jobs as jobs
set
last_error = (el->>'message'),
run_at = greatest(now(), run_at) + (exp(least(attempts, 10)) * interval '1 minute'),
locked_by = null,
locked_at = null,
payload = coalesce(el->'payload', jobs.payload)
from json_array_elements(json_build_array(json_build_object('jobId', @id::bigint, 'message', 'outboxlab retry'))) as els(el)
where id = (el->>'jobId')::bigint and locked_by = @worker::text and fence_token = @generation::uuid
returning id

-- name: rescue
with j as (
update _private_jobs as jobs
set locked_at = null, locked_by = null, run_at = greatest(run_at, now())
where locked_at < now() - interval '4 hours'
)
update _private_job_queues as job_queues
set locked_at = null, locked_by = null
where locked_at < now() - interval '4 hours'

-- name: state
select id, payload->>'event_id' AS event_id,
       case when locked_at is not null then 'INPROGRESS'
            when attempts >= max_attempts then 'DEAD'
            else 'READY' end AS status,
       fence_token AS generation,
       case when locked_at is null then null
            else locked_at < now() - interval '4 hours' end AS lease_expired,
       run_at <= now() AS due
from _private_jobs
order by id

-- name: expire
update _private_jobs set locked_at = now() - interval '4 hours 1 minute'
where id = @id and locked_at is not null

-- name: due
update _private_jobs set run_at = now() - interval '1 minute'
where id = @id and locked_at is null

-- name: age
update _private_jobs set locked_at = locked_at - make_interval(secs => @seconds)
where id = @id and locked_at is not null
