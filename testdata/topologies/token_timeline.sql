-- The article's counter, stamped with the server's timeline: the token is
-- timeline * 2^32 + the row's claim count. A promotion starts a new
-- timeline, so after a failover no claim can hand out a token a lost claim
-- had; crash recovery keeps the timeline, so after a crash under
-- async-commit the next claim hands out the lost claim's token again, and
-- its owner finishes the new owner's claim. The timeline is read from the
-- current WAL file's name (its first eight hex digits), which changes at
-- promotion; pg_control_checkpoint() shows it only after a checkpoint.
-- expect: single pass
-- expect: async-commit fail: token reissued
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
    attempts bigint NOT NULL DEFAULT 0,
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
SET status = 'INPROGRESS', attempts = o.attempts + 1,
    generation = ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint * 4294967296
                 + o.attempts + 1,
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
