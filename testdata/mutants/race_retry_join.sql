-- mutant: lenient_generation whose retry reads its generation guard in a
-- joined subselect (UPDATE ... FROM (SELECT id, generation FROM outbox_lab
-- WHERE id = @id) AS g WHERE g.generation = @generation) instead of the
-- UPDATE's own WHERE. The joined subselect is a separate scan of outbox_lab;
-- after the wait PostgreSQL keeps its row as first read. A stale retry that
-- starts while a reclaim's transaction holds the row sees generation 1 there
-- and waits for the row lock; when the reclaim commits, PostgreSQL's
-- EvalPlanQual re-checks only the target row's own predicate (id and status,
-- which the new claim still satisfies) on the new row version, and does not
-- re-evaluate the snapshot-read guard: the stale retry lands on the new
-- owner's claim (generation 2). Run one step at a time it is rejected (its
-- snapshot already shows generation 2), so only a waiting step or a
-- concurrent run shows it.
-- catch: stale owner's retry applied
-- outboxlab: order=fifo
-- outboxlab: policy=lenient

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
RETURNING id;

-- name: retry
UPDATE outbox_lab AS o
SET status = 'READY', lease_until = NULL,
    next_attempt_at = statement_timestamp() + interval '1 minute'
FROM (SELECT id, generation FROM outbox_lab WHERE id = @id) AS g
WHERE o.id = g.id
  AND o.status = 'INPROGRESS'
  AND g.generation = @generation
RETURNING o.id;

-- name: renew
UPDATE outbox_lab
SET lease_until = statement_timestamp() + interval '30 seconds'
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
RETURNING id;
