-- want: 11: missing required section "retry"
-- name: schema
CREATE TABLE outbox_lab (id bigint);

-- name: claim
SELECT id, 'e' AS event_id FROM outbox_lab;

-- name: complete
UPDATE outbox_lab SET id = id WHERE id = @id RETURNING id;

-- retry: to do
