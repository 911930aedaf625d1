-- slow_first_attempt.sql declaring a lease of ten seconds, of which its
-- claim and renew grant one: a lease found run out after the second and a
-- half of a first attempt's retry ran out before the declared length had
-- passed, which is the claim's fault, not the clock's (clock_test.go).
-- outboxlab: order=fifo
-- outboxlab: lease=10s

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
    lease_until = statement_timestamp() + interval '1 second'
FROM candidate AS c
WHERE o.id = c.id
RETURNING o.id, o.event_id, o.generation;

-- name: complete
WITH slow AS (SELECT pg_sleep(CASE WHEN @generation::bigint = 1 THEN 1.5 ELSE 0 END))
UPDATE outbox_lab SET status = 'SENT', lease_until = NULL
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
  AND lease_until > (SELECT clock_timestamp() FROM slow) -- read after the sleep
RETURNING id;

-- name: retry
WITH slow AS (SELECT pg_sleep(CASE WHEN @generation::bigint = 1 THEN 1.5 ELSE 0 END))
UPDATE outbox_lab
SET status = 'READY', lease_until = NULL,
    next_attempt_at = statement_timestamp() + interval '1 minute'
FROM slow
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
  AND lease_until > statement_timestamp()
RETURNING id;

-- name: renew
UPDATE outbox_lab
SET lease_until = statement_timestamp() + interval '1 second'
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
  AND lease_until > clock_timestamp()
RETURNING id;
