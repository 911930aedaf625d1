-- mutant: a "token" that is a function of the row's claim count (the md5 of
-- it): opaque to look at, but no more than the article's counter, since a
-- rewind that loses a claim takes the count back with it and the next
-- claim hands out the lost claim's token again. It passes where nothing is
-- forgotten; where a rewind loses a claim, the token is reissued.
-- expect: single pass
-- expect: async-commit fail: token reissued
-- expect: async-standby fail: token reissued
-- expect: sync-standby pass
-- outboxlab: order=fifo
-- outboxlab: fence=token

-- name: schema
CREATE TABLE outbox_lab (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id text NOT NULL UNIQUE,
    status text NOT NULL DEFAULT 'READY'
        CHECK (status IN ('READY', 'INPROGRESS', 'SENT')),
    attempts bigint NOT NULL DEFAULT 0,
    generation text,
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
SET status = 'INPROGRESS', attempts = o.attempts + 1,
    generation = md5((o.attempts + 1)::text),
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
