-- token_uuid with a bigint token: 53 random bits a claim (random() is
-- seeded from a strong random source in every backend), so a claim a
-- rewind loses leaves no number for the next claim to hand out again.
-- expect: single pass
-- expect: async-commit pass
-- expect: async-standby pass
-- expect: sync-standby pass
-- outboxlab: order=fifo
-- outboxlab: fence=token

-- name: schema
CREATE TABLE outbox_lab (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id text NOT NULL UNIQUE,
    status text NOT NULL DEFAULT 'READY'
        CHECK (status IN ('READY', 'INPROGRESS', 'SENT')),
    generation bigint,
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
SET status = 'INPROGRESS', generation = floor(random() * 9007199254740992)::bigint,
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
