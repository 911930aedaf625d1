-- The article's protocol, with a history of every committed change of a
-- row for the concurrent fault storm (kill_test.go) to check afterwards,
-- lost replies included. The claim, complete and retry are leased's own.
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

-- Every committed change of a row. Per row, seq is in commit order: an
-- update waits for the row's lock, so it draws its seq after the previous
-- update of the row committed.
CREATE TABLE outbox_history (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id text NOT NULL,
    old_status text NOT NULL,
    new_status text NOT NULL,
    old_generation bigint NOT NULL,
    new_generation bigint NOT NULL,
    lease_was_live boolean NOT NULL
);

CREATE FUNCTION outbox_history_record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO outbox_history (event_id, old_status, new_status, old_generation, new_generation, lease_was_live)
    VALUES (OLD.event_id, OLD.status, NEW.status, OLD.generation, NEW.generation,
            coalesce(OLD.lease_until > clock_timestamp(), false));
    RETURN NULL;
END
$$;

CREATE TRIGGER outbox_history AFTER UPDATE ON outbox_lab
    FOR EACH ROW EXECUTE FUNCTION outbox_history_record();

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
SET status = 'INPROGRESS', generation = o.generation + 1,
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
