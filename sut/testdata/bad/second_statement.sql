-- want: 20: section "state" holds 2 statements
-- outboxlab: order=fifo

-- name: schema
CREATE TABLE outbox_lab (id bigint, status text);
CREATE INDEX ON outbox_lab (status);

-- name: claim
SELECT id, 'e' AS event_id FROM outbox_lab;

-- name: complete
UPDATE outbox_lab SET status = 'SENT'
WHERE id = @id
RETURNING id;

-- name: state
SELECT id, event_id, status, NULL::boolean AS lease_expired, true AS due
FROM outbox_lab;
-- forgot to delete this debugging query:
SELECT * FROM outbox_lab;

-- name: retry
UPDATE outbox_lab SET id = id WHERE id = @id RETURNING id;
