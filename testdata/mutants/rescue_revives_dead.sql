-- mutant: rescue_dead whose rescue also sweeps DEAD rows (as if DEAD were a retryable failure) and sends them back to READY: an event that spent its budget is claimed again, and a dead letter silently becomes live work.
-- catch: DEAD is terminal
-- outboxlab: order=fifo
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
  AND lease_until > clock_timestamp()
RETURNING id;

-- name: retry
UPDATE outbox_lab
SET status = CASE WHEN generation >= 2 THEN 'DEAD' ELSE 'READY' END,
    lease_until = NULL,
    next_attempt_at = statement_timestamp() + interval '1 minute'
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
  AND lease_until > clock_timestamp()
RETURNING id;

-- name: rescue
WITH expired AS (
    SELECT id FROM outbox_lab
    WHERE (status = 'INPROGRESS' AND lease_until <= statement_timestamp())
       OR status = 'DEAD'
    ORDER BY id
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox_lab AS o
SET status = CASE WHEN o.status = 'INPROGRESS' AND o.generation >= 2
                  THEN 'DEAD' ELSE 'READY' END,
    lease_until = NULL,
    next_attempt_at = statement_timestamp() + interval '1 minute'
FROM expired AS e
WHERE o.id = e.id
RETURNING o.id, o.status;

-- name: state
SELECT id, event_id, status, generation,
       CASE WHEN lease_until IS NULL THEN NULL
            ELSE lease_until <= statement_timestamp() END AS lease_expired,
       next_attempt_at <= statement_timestamp() AS due
FROM outbox_lab ORDER BY id;
