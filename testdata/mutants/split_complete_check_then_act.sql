-- mutant: two_statement_complete whose complete checks ownership without a
-- lock and then writes by id: the first statement records the claim in
-- finished when it is still current (generation, live lease) but takes no
-- row lock (no FOR UPDATE); the second marks the row SENT by id wherever that
-- record exists (and removes the record), without checking the row again.
-- (finished has no foreign key here: the key check's KEY SHARE lock on the
-- row would make a claim skip it until the commit, hiding the race.) Under READ COMMITTED
-- another transaction may commit between the two statements: the lease runs
-- out, another worker reclaims the row (generation 2), and the second
-- statement marks the new owner's claim SENT. Run whole, one step at a time,
-- the section is indivisible and correct; only a step split at its statement
-- boundary (or a concurrent run) shows the race.
-- catch: stale owner's complete applied
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
CREATE TABLE finished (
    outbox_id bigint NOT NULL,
    generation bigint NOT NULL,
    worker text NOT NULL,
    finished_at timestamptz NOT NULL DEFAULT statement_timestamp(),
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
INSERT INTO finished (outbox_id, generation, worker)
SELECT id, generation, @worker FROM outbox_lab
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
  AND lease_until > clock_timestamp();

WITH handed AS (
    DELETE FROM finished WHERE outbox_id = @id AND generation = @generation
    RETURNING outbox_id
), sent AS (
    UPDATE outbox_lab AS o SET status = 'SENT', lease_until = NULL
    FROM handed AS h
    WHERE o.id = h.outbox_id
    RETURNING o.id
)
SELECT EXISTS (SELECT 1 FROM sent) AS applied, @id::bigint AS id;

-- name: retry
UPDATE outbox_lab
SET status = 'READY', lease_until = NULL,
    next_attempt_at = statement_timestamp() + interval '1 minute'
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
  AND lease_until > clock_timestamp()
RETURNING id;
