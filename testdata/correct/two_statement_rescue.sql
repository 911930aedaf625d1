-- Correct: lenient_generation with a rescuer of two statements: the first
-- reads the expired rows' ids into a temporary table, the second writes
-- them back to READY only where the row it updates is still INPROGRESS
-- with an expired lease (the predicate is re-checked on the row version the
-- UPDATE writes, after any commit in between). The twin of
-- testdata/mutants/split_rescue_read_then_write.sql, which leaves out that
-- re-check.
-- outboxlab: order=fifo
-- outboxlab: policy=lenient

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
RETURNING id;

-- name: retry
UPDATE outbox_lab
SET status = 'READY', lease_until = NULL,
    next_attempt_at = statement_timestamp() + interval '1 minute'
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
CREATE TEMP TABLE stuck ON COMMIT DROP AS
SELECT id FROM outbox_lab
WHERE status = 'INPROGRESS' AND lease_until <= statement_timestamp();

UPDATE outbox_lab AS o
SET status = 'READY', lease_until = NULL,
    next_attempt_at = statement_timestamp()
FROM stuck AS s
WHERE o.id = s.id
  AND o.status = 'INPROGRESS' AND o.lease_until <= statement_timestamp();
