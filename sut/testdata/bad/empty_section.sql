-- want: 8: section "claim" holds no SQL statement
-- name: schema
CREATE TABLE outbox_lab (id bigint);
-- name: renew
UPDATE outbox_lab SET id = id WHERE id = @id RETURNING id;

-- a claim still to be written:
-- name: claim
-- SELECT id, event_id FROM outbox_lab;

-- name: complete
UPDATE outbox_lab SET id = id WHERE id = @id RETURNING id;

-- name: retry
UPDATE outbox_lab SET id = id WHERE id = @id RETURNING id;
