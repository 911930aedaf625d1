-- Correct: a finalize in two statements, after Solid Queue's shape (a
-- record of the finished execution written in the same transaction as the
-- job's own change). The first statement locks the row while it is still
-- this claim's (current generation, live lease) and records the claim in
-- finished; the second marks the row SENT only where that record exists and
-- reports the outcome as one row with a boolean applied column.
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
CREATE TABLE finished (
    outbox_id bigint NOT NULL REFERENCES outbox_lab (id),
    generation bigint NOT NULL,
    worker text NOT NULL,
    finished_at timestamptz NOT NULL DEFAULT statement_timestamp(),
    PRIMARY KEY (outbox_id, generation)
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
INSERT INTO finished (outbox_id, generation, worker)
SELECT id, generation, @worker FROM outbox_lab
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
  AND lease_until > clock_timestamp()
FOR UPDATE;

WITH sent AS (
    UPDATE outbox_lab AS o SET status = 'SENT', lease_until = NULL
    FROM finished AS f
    WHERE o.id = @id
      AND o.status = 'INPROGRESS'
      AND o.generation = @generation
      AND f.outbox_id = o.id
      AND f.generation = o.generation
    RETURNING o.id
)
SELECT EXISTS (SELECT 1 FROM sent) AS applied, @id::bigint AS id;

-- name: retry
UPDATE outbox_lab
SET status = 'READY', lease_until = NULL,
    next_attempt_at = statement_timestamp() + interval '1 minute'
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
  AND lease_until > clock_timestamp()
RETURNING id;
