-- mutant: lenient_generation with a rescuer of two statements in the manner
-- of River's at the catalogue's commit (JobGetStuck, then JobRescueMany by
-- id): the first reads the expired rows' ids into a temporary table, the
-- second writes those ids back to READY without looking at the rows again.
-- Under the lenient policy an owner whose lease ran out may still finish
-- until a claim takes the row; if it does so between the rescue's two
-- statements, the rescue turns the finished row back into a claimable one
-- (River's "completed job made retryable"); if a claim takes the row in
-- between, the rescue returns the new owner's live claim to READY, which is
-- what the shrunk counterexample shows. No claim transaction is open:
-- only a split of the rescue at its statement boundary shows it, and the
-- twin that re-checks the row in its UPDATE is
-- testdata/correct/two_statement_rescue.sql.
-- catch: rescue took e1 whose lease is live
-- catch: SENT is terminal: e1 went SENT -> READY
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
UPDATE outbox_lab
SET status = 'READY', lease_until = NULL,
    next_attempt_at = statement_timestamp() + interval '1 minute'
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
RETURNING id;

-- name: renew
UPDATE outbox_lab
SET lease_until = statement_timestamp() + interval '30 seconds'
WHERE id = @id
  AND status = 'INPROGRESS'
  AND generation = @generation
RETURNING id;

-- name: rescue
CREATE TEMP TABLE stuck ON COMMIT DROP AS
SELECT id FROM outbox_lab
WHERE status = 'INPROGRESS' AND lease_until <= statement_timestamp();

UPDATE outbox_lab AS o
SET status = 'READY', lease_until = NULL,
    next_attempt_at = statement_timestamp()
FROM stuck AS s
WHERE o.id = s.id;
