-- Correct: leased with an attempt budget of three claims and no reaper. The
-- claim runs two statements in one transaction: the first buries expired
-- claims that were already the third attempt (DEAD), the second claims as
-- leased but takes an expired lease only while its generation is under the
-- budget. A due READY row is always under budget, because a retry of the
-- third attempt makes the row DEAD rather than READY. Since the generation
-- rises on every committed claim, abandoned claims count as attempts.
-- outboxlab: order=fifo
-- outboxlab: max_attempts=3

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
WITH exhausted AS (
    SELECT id FROM outbox_lab
    WHERE status = 'INPROGRESS' AND lease_until <= statement_timestamp()
      AND generation >= 3
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox_lab AS o
SET status = 'DEAD', lease_until = NULL
FROM exhausted AS x
WHERE o.id = x.id;

WITH candidate AS (
    SELECT id FROM outbox_lab
    WHERE (status = 'READY' AND next_attempt_at <= statement_timestamp())
       OR (status = 'INPROGRESS' AND lease_until <= statement_timestamp()
           AND generation < 3)
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
SET status = CASE WHEN generation >= 3 THEN 'DEAD' ELSE 'READY' END,
    lease_until = NULL,
    next_attempt_at = statement_timestamp() + interval '1 minute'
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
  AND lease_until > clock_timestamp()
RETURNING id;

-- name: state
SELECT id, event_id, status, generation,
       CASE WHEN lease_until IS NULL THEN NULL
            ELSE lease_until <= statement_timestamp() END AS lease_expired,
       next_attempt_at <= statement_timestamp() AS due
FROM outbox_lab ORDER BY id;
