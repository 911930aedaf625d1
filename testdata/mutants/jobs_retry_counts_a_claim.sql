-- mutant: jobs_lease whose retry counts a claim as well (claims = claims + 1 in retry too, as if the column counted attempts): the outcomes compare claims with the count of claims the relay was given, so after a retry and a reclaim the current owner's complete and retry are refused and its work is never recorded. The suite sends its own count of the row's claims as @generation, and a refusal for a count that matches the row's is the protocol's failure, not the count's.
-- catch: current owner's complete rejected
-- catch: current owner's retry rejected
-- outboxlab: order=fifo
-- outboxlab: lease=5m

-- name: schema
CREATE TABLE job (
    job_id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    message_key text NOT NULL UNIQUE,
    phase text NOT NULL DEFAULT 'queued'
        CHECK (phase IN ('queued', 'running', 'done')),
    claims integer NOT NULL DEFAULT 0,
    locked_until timestamptz,
    run_after timestamptz NOT NULL DEFAULT clock_timestamp(),
    CHECK ((phase = 'running') = (locked_until IS NOT NULL))
);

-- name: enqueue
INSERT INTO job (message_key) VALUES (@event_id)

-- name: claim
WITH next AS (
    SELECT job_id FROM job
    WHERE (phase = 'queued' AND run_after <= clock_timestamp())
       OR (phase = 'running' AND locked_until <= clock_timestamp())
    ORDER BY seq
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
UPDATE job
SET phase = 'running', claims = job.claims + 1,
    locked_until = clock_timestamp() + interval '5 minutes'
FROM next
WHERE job.job_id = next.job_id
RETURNING job.job_id AS id, job.message_key AS event_id

-- name: complete
UPDATE job SET phase = 'done', locked_until = NULL
WHERE job_id = @id AND phase = 'running' AND claims = @generation
  AND locked_until > clock_timestamp()
RETURNING job_id

-- name: retry
UPDATE job
SET phase = 'queued', locked_until = NULL, claims = claims + 1,
    run_after = clock_timestamp() + interval '2 minutes'
WHERE job_id = @id AND phase = 'running' AND claims = @generation
  AND locked_until > clock_timestamp()
RETURNING job_id

-- name: state
SELECT job_id AS id, message_key AS event_id,
       CASE phase WHEN 'queued' THEN 'READY'
                  WHEN 'running' THEN 'INPROGRESS'
                  WHEN 'done' THEN 'SENT' END AS status,
       CASE WHEN locked_until IS NULL THEN NULL
            ELSE locked_until <= clock_timestamp() END AS lease_expired,
       run_after <= clock_timestamp() AS due
FROM job ORDER BY seq

-- name: expire
UPDATE job SET locked_until = clock_timestamp() - interval '1 second'
WHERE job_id = @id AND phase = 'running'

-- name: due
UPDATE job SET run_after = clock_timestamp() - interval '1 second'
WHERE job_id = @id

-- name: age
UPDATE job SET locked_until = locked_until - make_interval(secs => @seconds)
WHERE job_id = @id AND phase = 'running'
