-- mutant: rescue_waits whose reaper is two statements in one transaction,
-- in the manner of River's rescuer (JobGetStuck, then JobRescueMany by id):
-- the first reads the expired rows' ids into a temporary table, the second
-- updates those ids with no guard of its own. A rescue whose update meets a
-- row a reclaim's open transaction holds waits for its lock; once the
-- reclaim commits, the update's only predicate (the id) still holds on the
-- new row version, and the rescue returns the new owner's live claim to
-- READY. Run one step at a time its first statement already sees the fresh
-- lease and leaves the row out.
-- catch: rescue took e1 whose lease is live
-- outboxlab: order=fifo

-- name: schema
CREATE TABLE outbox_lab (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id text NOT NULL UNIQUE,
    status text NOT NULL DEFAULT 'READY'
        CHECK (status IN ('READY', 'INPROGRESS', 'SENT')),
    generation bigint NOT NULL DEFAULT 0,
    lease_until timestamptz,
    next_attempt_at timestamptz NOT NULL DEFAULT statement_timestamp(),
    CHECK ((status = 'INPROGRESS') = (lease_until IS NOT NULL))
);

-- name: claim
WITH candidate AS (
    SELECT id FROM outbox_lab
    WHERE (status = 'READY' AND next_attempt_at <= statement_timestamp())
       OR (status = 'INPROGRESS' AND lease_until <= statement_timestamp())
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
  AND lease_until > clock_timestamp()
RETURNING id;

-- name: retry
UPDATE outbox_lab
SET status = 'READY', lease_until = NULL,
    next_attempt_at = statement_timestamp() + interval '1 minute'
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
  AND lease_until > clock_timestamp()
RETURNING id;

-- name: rescue
CREATE TEMP TABLE stuck ON COMMIT DROP AS
SELECT id FROM outbox_lab
WHERE status = 'INPROGRESS' AND lease_until <= statement_timestamp();

UPDATE outbox_lab AS o
SET status = 'READY', lease_until = NULL,
    next_attempt_at = statement_timestamp()
FROM stuck AS s
WHERE o.id = s.id;

-- name: state
SELECT id, event_id, status, generation,
       CASE WHEN lease_until IS NULL THEN NULL
            ELSE lease_until <= statement_timestamp() END AS lease_expired,
       next_attempt_at <= statement_timestamp() AS due
FROM outbox_lab ORDER BY id;
