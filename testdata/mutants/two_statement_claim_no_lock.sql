-- mutant: two_statement_claim whose first statement copies the candidate without FOR UPDATE SKIP LOCKED: it picks a row another open claim transaction has already taken, and the second statement's UPDATE waits on that transaction's row lock (and, once it commits, takes the row from its owner). Split between its statements (a claim split), the claim's read picks a row another worker's claim transaction holds; that worker commits and completes it, and the second statement then claims the SENT row.
-- catch: claim blocked
-- catch: claim took e1, a SENT row
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
CREATE TEMP TABLE picked ON COMMIT DROP AS
SELECT id FROM outbox_lab
WHERE (status = 'READY' AND next_attempt_at <= statement_timestamp())
   OR (status = 'INPROGRESS' AND lease_until <= statement_timestamp())
ORDER BY id
LIMIT 1;

UPDATE outbox_lab AS o
SET status = 'INPROGRESS', generation = o.generation + 1,
    lease_until = statement_timestamp() + interval '30 seconds'
FROM picked AS p
WHERE o.id = p.id
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
