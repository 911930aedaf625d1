-- mutant: two_statement_renew whose first statement checks ownership
-- without a lock (no FOR UPDATE) before the second extends the lease by id.
-- Under READ COMMITTED another transaction may commit between the two
-- statements: the lease runs out, another worker reclaims the row
-- (generation 2), and the second statement renews the new owner's claim. Run whole,
-- one step at a time, the section is indivisible; a step split at its
-- statement boundary shows the race.
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

CREATE TABLE handoff (
    outbox_id bigint NOT NULL,
    generation bigint NOT NULL,
    PRIMARY KEY (outbox_id, generation)
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
INSERT INTO handoff (outbox_id, generation)
SELECT id, generation FROM outbox_lab
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
  AND lease_until > clock_timestamp();

WITH handed AS (
    DELETE FROM handoff WHERE outbox_id = @id AND generation = @generation
    RETURNING outbox_id
), done AS (
    UPDATE outbox_lab AS o
    SET lease_until = statement_timestamp() + interval '30 seconds'
    FROM handed AS h
    WHERE o.id = h.outbox_id
    RETURNING o.id
)
SELECT EXISTS (SELECT 1 FROM done) AS applied, @id::bigint AS id;
