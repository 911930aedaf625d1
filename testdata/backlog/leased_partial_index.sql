-- leased with a partial index on its eligible rows: the claim's two branches
-- both test status, READY or INPROGRESS, so an index on id that holds only
-- those rows implies the claim's WHERE, and the claim's ORDER BY id walk
-- starts at the first unsent row instead of filtering every SENT row ahead
-- of it. The claim, complete and retry are leased's, unchanged. The index is
-- what `outboxlab bench --backlog leased` suggests; see
-- docs/backlog.md.
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

-- A row leaves the index when complete makes it SENT: its new version
-- does not match the predicate. status is in the predicate, so claims and
-- outcomes are no longer HOT updates: that is the index's price.
CREATE INDEX outbox_lab_eligible ON outbox_lab (id)
    WHERE status IN ('READY', 'INPROGRESS');

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
