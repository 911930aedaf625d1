-- mutant, equivalent: renew_join under the strict policy: the same
-- snapshot-read generation guard in renew (a joined subselect (UPDATE ...
-- FROM (SELECT id, generation FROM outbox_lab WHERE id = @id) AS g WHERE
-- g.generation = @generation)), plus leased's lease check in the UPDATE's own
-- WHERE. Equivalent to leased for every program the state machine runs,
-- waiting steps included: a reclaim needs an expired lease, and the stale
-- renew's own first read of the row (in the same snapshot) already sees that
-- expired lease and drops the row without waiting for its lock, so the
-- snapshot guard never meets the new claim. A wait can only start while the
-- lease is still live, behind a transaction that does not reclaim (a
-- fixture's); a reclaim that follows that transaction within the same
-- statement, with the lease expiring in between, is the one window left,
-- which only a concurrent run could hit.
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

-- name: renew
UPDATE outbox_lab AS o
SET lease_until = statement_timestamp() + interval '30 seconds'
FROM (SELECT id, generation FROM outbox_lab WHERE id = @id) AS g
WHERE o.id = g.id
  AND o.status = 'INPROGRESS'
  AND g.generation = @generation
  AND o.lease_until > clock_timestamp()
RETURNING o.id;
