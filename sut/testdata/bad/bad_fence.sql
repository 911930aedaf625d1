-- want: 3: fence=lamport: want fence=counter or fence=token
-- outboxlab: order=fifo
-- outboxlab: fence=lamport

-- name: schema
CREATE TABLE outbox_lab (id bigint, generation uuid);

-- name: claim
SELECT id, 'e' AS event_id, generation FROM outbox_lab;

-- name: complete
UPDATE outbox_lab SET id = id WHERE id = @id AND generation = @generation RETURNING id;

-- name: retry
UPDATE outbox_lab SET id = id WHERE id = @id AND generation = @generation RETURNING id;
