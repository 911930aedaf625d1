-- mutant: attempts_dead, lenient and with a budget of two attempts, whose claim
-- buries in the manner of a rescue that reads, then writes: the first
-- statement copies the spent claims' ids (expired, last attempt) without a
-- lock, the second makes those rows DEAD, locking each (SKIP LOCKED, so it
-- never waits) but without looking again at what it is burying. Under the
-- lenient policy a spent claim's owner may still finish until someone else
-- takes the row; if it does so between the claim's statements, the claim
-- turns its SENT row DEAD. Run whole the claim is correct, and no claim
-- transaction open elsewhere shows it: only a claim split at its statement
-- boundary does. The twin that looks again is
-- testdata/correct/split_claim_bury_rechecked.sql.
-- catch: SENT is terminal: e1 went SENT -> DEAD
-- outboxlab: order=fifo
-- outboxlab: policy=lenient
-- outboxlab: max_attempts=2

-- name: schema
CREATE TABLE outbox_lab (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id text NOT NULL UNIQUE,
    status text NOT NULL DEFAULT 'READY'
        CHECK (status IN ('READY', 'INPROGRESS', 'SENT', 'DEAD')),
    generation bigint NOT NULL DEFAULT 0,
    lease_until timestamptz,
    next_attempt_at timestamptz NOT NULL DEFAULT statement_timestamp(),
    CHECK ((status = 'INPROGRESS') = (lease_until IS NOT NULL))
);

-- name: claim
CREATE TEMP TABLE spent ON COMMIT DROP AS
SELECT id FROM outbox_lab
WHERE status = 'INPROGRESS' AND lease_until <= statement_timestamp()
  AND generation >= 2;

UPDATE outbox_lab AS o
SET status = 'DEAD', lease_until = NULL
WHERE o.id IN (
    SELECT l.id FROM outbox_lab AS l JOIN spent AS s ON l.id = s.id
    FOR UPDATE OF l SKIP LOCKED
);

WITH candidate AS (
    SELECT id FROM outbox_lab
    WHERE (status = 'READY' AND next_attempt_at <= statement_timestamp())
       OR (status = 'INPROGRESS' AND lease_until <= statement_timestamp()
           AND generation < 2)
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
UPDATE outbox_lab
SET status = CASE WHEN generation >= 2 THEN 'DEAD' ELSE 'READY' END,
    lease_until = NULL,
    next_attempt_at = statement_timestamp() + interval '1 minute'
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
RETURNING id;

-- name: state
SELECT id, event_id, status, generation,
       CASE WHEN lease_until IS NULL THEN NULL
            ELSE lease_until <= statement_timestamp() END AS lease_expired,
       next_attempt_at <= statement_timestamp() AS due
FROM outbox_lab ORDER BY id;
