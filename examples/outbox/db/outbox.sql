-- The claim protocol of a relay that publishes outbox_message rows: a
-- claim takes the oldest due pending message, or one whose publisher's
-- lease ran out, and raises its attempt (the fencing token); published,
-- release and extend apply only for the current attempt while its lease
-- is live. The file is in outboxlab's protocol format (docs/protocol-format.md
-- in the outboxlab repository); outbox_test.go checks it.
-- outboxlab: order=fifo
-- outboxlab: lease=60s

-- name: schema
CREATE TABLE outbox_message (
    message_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_key text NOT NULL UNIQUE,
    state text NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'publishing', 'published')),
    attempt bigint NOT NULL DEFAULT 0,
    locked_until timestamptz,
    available_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    CHECK ((state = 'publishing') = (locked_until IS NOT NULL))
);

-- name: enqueue
INSERT INTO outbox_message (event_key) VALUES (@event_id)

-- name: claim
WITH next AS (
    SELECT message_id FROM outbox_message
    WHERE (state = 'pending' AND available_at <= clock_timestamp())
       OR (state = 'publishing' AND locked_until <= clock_timestamp())
    ORDER BY message_id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox_message AS m
SET state = 'publishing', attempt = m.attempt + 1,
    locked_until = clock_timestamp() + interval '60 seconds'
FROM next
WHERE m.message_id = next.message_id
RETURNING m.message_id AS id, m.event_key AS event_id, m.attempt AS generation

-- name: complete
UPDATE outbox_message SET state = 'published', locked_until = NULL
WHERE message_id = @id AND state = 'publishing' AND attempt = @generation
  AND locked_until > clock_timestamp()
RETURNING message_id

-- name: retry
UPDATE outbox_message
SET state = 'pending', locked_until = NULL,
    available_at = clock_timestamp() + interval '30 seconds'
WHERE message_id = @id AND state = 'publishing' AND attempt = @generation
  AND locked_until > clock_timestamp()
RETURNING message_id

-- name: renew
UPDATE outbox_message SET locked_until = clock_timestamp() + interval '60 seconds'
WHERE message_id = @id AND state = 'publishing' AND attempt = @generation
  AND locked_until > clock_timestamp()
RETURNING message_id

-- name: state
SELECT message_id AS id, event_key AS event_id,
       CASE state WHEN 'pending' THEN 'READY'
                  WHEN 'publishing' THEN 'INPROGRESS'
                  WHEN 'published' THEN 'SENT' END AS status,
       attempt AS generation,
       CASE WHEN locked_until IS NULL THEN NULL
            ELSE locked_until <= clock_timestamp() END AS lease_expired,
       available_at <= clock_timestamp() AS due
FROM outbox_message ORDER BY message_id

-- name: expire
UPDATE outbox_message SET locked_until = clock_timestamp() - interval '1 second'
WHERE message_id = @id AND state = 'publishing'

-- name: due
UPDATE outbox_message SET available_at = clock_timestamp() - interval '1 second'
WHERE message_id = @id

-- name: age
UPDATE outbox_message SET locked_until = locked_until - make_interval(secs => @seconds)
WHERE message_id = @id AND state = 'publishing'
