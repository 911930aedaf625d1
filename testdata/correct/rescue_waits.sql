-- Correct: leased (its claim takes due READY rows and expired leases) with a
-- reaper beside it whose guard is in the UPDATE's own WHERE and which does
-- not skip locked rows. A rescue that starts while a reclaim's open
-- transaction holds an expired row waits for that row's lock; when the
-- reclaim commits, PostgreSQL re-checks the UPDATE's own predicate on the
-- new row version (a fresh lease), and the rescue leaves the new claim
-- alone. After a rollback or a kill it finds the expired row and returns it.
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
UPDATE outbox_lab
SET status = 'READY', lease_until = NULL,
    next_attempt_at = statement_timestamp()
WHERE status = 'INPROGRESS' AND lease_until <= statement_timestamp()
RETURNING id;

-- name: state
SELECT id, event_id, status, generation,
       CASE WHEN lease_until IS NULL THEN NULL
            ELSE lease_until <= statement_timestamp() END AS lease_expired,
       next_attempt_at <= statement_timestamp() AS due
FROM outbox_lab ORDER BY id;
