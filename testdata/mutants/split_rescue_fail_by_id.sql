-- mutant: an attempt budget of one claim, the lenient policy and a
-- reaper of two statements, in the manner of job queues whose maintenance
-- lists the expired jobs in one query and fails them by id in the next:
-- the first statement copies the expired rows' ids, the second makes
-- those ids DEAD without looking at the rows again. Under the lenient
-- policy an owner whose lease ran out may still complete or renew until a
-- claim or a rescue takes the row; if it does so between the reaper's two
-- statements, the reaper buries a SENT row (SENT is terminal) or a lease
-- its owner has just renewed. Only a split of the rescue at its statement
-- boundary shows it.
-- catch: SENT is terminal: e1 went SENT -> DEAD
-- catch: rescue took e1 whose lease is live
-- outboxlab: order=fifo
-- outboxlab: policy=lenient
-- outboxlab: max_attempts=1

-- name: schema
CREATE TABLE outbox_lab (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id text NOT NULL UNIQUE,
    status text NOT NULL DEFAULT 'READY'
        CHECK (status IN ('READY', 'INPROGRESS', 'SENT', 'DEAD')),
    generation bigint NOT NULL DEFAULT 0,
    lease_until timestamptz,
    next_attempt_at timestamptz NOT NULL DEFAULT statement_timestamp(),
    CHECK ((status = 'INPROGRESS') = (lease_until IS NOT NULL))
);

-- name: claim
WITH candidate AS (
    SELECT id FROM outbox_lab
    WHERE status = 'READY' AND next_attempt_at <= statement_timestamp()
    ORDER BY id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox_lab AS o
SET status = 'INPROGRESS', generation = o.generation + 1,
    lease_until = statement_timestamp() + interval '30 seconds'
FROM candidate AS c
WHERE o.id = c.id
RETURNING o.id, o.event_id, o.generation;

-- name: complete
UPDATE outbox_lab SET status = 'SENT', lease_until = NULL
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
RETURNING id;

-- name: retry
UPDATE outbox_lab
SET status = 'DEAD', lease_until = NULL
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
RETURNING id;

-- name: renew
UPDATE outbox_lab
SET lease_until = statement_timestamp() + interval '30 seconds'
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
RETURNING id;

-- name: rescue
CREATE TEMP TABLE expired ON COMMIT DROP AS
SELECT id FROM outbox_lab
WHERE status = 'INPROGRESS' AND lease_until <= statement_timestamp();

UPDATE outbox_lab AS o
SET status = 'DEAD', lease_until = NULL
FROM expired AS x
WHERE o.id = x.id;

-- name: state
SELECT id, event_id, status, generation,
       CASE WHEN lease_until IS NULL THEN NULL
            ELSE lease_until <= statement_timestamp() END AS lease_expired,
       next_attempt_at <= statement_timestamp() AS due
FROM outbox_lab ORDER BY id;
