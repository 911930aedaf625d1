-- mutant: race_renew_cte under the strict policy (leased): the same snapshot-read
-- generation guard in renew (a CTE (WITH current_claim AS (SELECT generation
-- ...)) that the WHERE clause compares with @generation), plus leased's lease
-- check in the UPDATE's own WHERE. A stale renew sent while another worker's
-- claim transaction holds the row, the lease still live to every other
-- connection, passes both guards on the committed row and waits for the lock.
-- If that transaction expires the lease and reclaims the row before it
-- commits (the race's Begin(expire e1), docs/races.md), PostgreSQL re-checks
-- only the UPDATE's own WHERE on the new row version, whose fresh lease
-- passes, while the snapshot guard still sees the old generation: the stale
-- renew lands on the new claim. In production the reclaim commits in the
-- instant between the lock's release and the re-check (check --concurrent
-- finds it about once in six runs); this file was in equivalent/ until the
-- machine could take that step.
-- catch: stale owner's renew applied
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
WITH current_claim AS (
    SELECT generation FROM outbox_lab WHERE id = @id
)
UPDATE outbox_lab
SET lease_until = statement_timestamp() + interval '30 seconds'
WHERE id = @id
  AND status = 'INPROGRESS'
  AND (SELECT generation FROM current_claim) = @generation
  AND lease_until > clock_timestamp()
RETURNING id;
