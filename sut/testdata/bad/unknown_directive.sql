-- want: 3: unknown directive "workers"
-- outboxlab: order=any
-- outboxlab: workers=4

-- name: schema
CREATE TABLE outbox_lab (id bigint);

-- name: claim
SELECT id, 'e' AS event_id FROM outbox_lab;

-- name: complete
UPDATE outbox_lab SET id = id WHERE id = @id RETURNING id;

-- name: retry
UPDATE outbox_lab SET id = id WHERE id = @id RETURNING id;
