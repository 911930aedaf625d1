-- Correct: the twin of testdata/mutants/split_claim_bury_read_then_write.sql:
-- attempts_dead, lenient, with a budget of two attempts, whose claim reads the
-- spent claims' ids without a lock and then buries only those rows that are
-- still spent when it locks them. A spent row its owner finished between
-- the two statements stays SENT.
-- outboxlab: order=fifo
-- outboxlab: policy=lenient
-- outboxlab: max_attempts=2

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
CREATE TEMP TABLE spent ON COMMIT DROP AS
SELECT id FROM outbox_lab
WHERE status = 'INPROGRESS' AND lease_until <= statement_timestamp()
  AND generation >= 2;

UPDATE outbox_lab AS o
SET status = 'DEAD', lease_until = NULL
WHERE o.id IN (
    SELECT l.id FROM outbox_lab AS l JOIN spent AS s ON l.id = s.id
    WHERE l.status = 'INPROGRESS' AND l.lease_until <= statement_timestamp()
      AND l.generation >= 2
    FOR UPDATE OF l SKIP LOCKED
);

WITH candidate AS (
    SELECT id FROM outbox_lab
    WHERE (status = 'READY' AND next_attempt_at <= statement_timestamp())
       OR (status = 'INPROGRESS' AND lease_until <= statement_timestamp()
           AND generation < 2)
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
SET status = CASE WHEN generation >= 2 THEN 'DEAD' ELSE 'READY' END,
    lease_until = NULL,
    next_attempt_at = statement_timestamp() + interval '1 minute'
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
RETURNING id;

-- name: state
SELECT id, event_id, status, generation,
       CASE WHEN lease_until IS NULL THEN NULL
            ELSE lease_until <= statement_timestamp() END AS lease_expired,
       next_attempt_at <= statement_timestamp() AS due
FROM outbox_lab ORDER BY id;
