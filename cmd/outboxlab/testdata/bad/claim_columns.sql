-- want: 15: section "claim": missing result column(s) event_id
-- The claim forgets to return event_id: only the server can tell.
-- name: schema
CREATE TABLE outbox_lab (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id text NOT NULL UNIQUE,
    status text NOT NULL DEFAULT 'READY',
    generation bigint NOT NULL DEFAULT 0,
    lease_until timestamptz,
    next_attempt_at timestamptz NOT NULL DEFAULT statement_timestamp()
);



-- name: claim
UPDATE outbox_lab SET status = 'INPROGRESS', generation = generation + 1
WHERE id = (SELECT id FROM outbox_lab WHERE status = 'READY' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, generation;

-- name: complete
UPDATE outbox_lab SET status = 'SENT' WHERE id = @id AND generation = @generation RETURNING id;

-- name: retry
UPDATE outbox_lab SET status = 'READY' WHERE id = @id AND generation = @generation RETURNING id;
