-- want: 8: section complete: syntax error
-- name: schema
CREATE TABLE outbox_lab (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, event_id text NOT NULL, status text NOT NULL DEFAULT 'READY', generation bigint NOT NULL DEFAULT 0, lease_until timestamptz, next_attempt_at timestamptz NOT NULL DEFAULT statement_timestamp());
-- name: claim
UPDATE outbox_lab SET status = 'INPROGRESS' WHERE id = 1 RETURNING id, event_id;
-- name: complete
UPDATE outbox_lab SET status = 'SENT'
WHER id = @id RETURNING id;
-- name: retry
UPDATE outbox_lab SET status = 'READY' WHERE id = @id RETURNING id;
