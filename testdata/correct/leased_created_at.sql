-- The article's protocol in first-in-first-out order by creation time, as
-- most home-grown queues order: created_at DEFAULT now(), ORDER BY
-- created_at. Correct when every event is enqueued in a transaction of its
-- own, as the harness enqueues them: each then has a created_at of its own.
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
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((status = 'INPROGRESS') = (lease_until IS NOT NULL))
);

-- name: claim
WITH candidate AS (
    SELECT id FROM outbox_lab
    WHERE (status = 'READY' AND next_attempt_at <= statement_timestamp())
       OR (status = 'INPROGRESS' AND lease_until <= statement_timestamp())
    ORDER BY created_at
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
