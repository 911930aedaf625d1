-- mutant: session_lease, unchanged, deployed behind PgBouncer in transaction mode: the mistake is the deployment. A client's transactions run on whichever server connection is free, so the claim's lock stays on the server connection the claim ran on: the owner's complete or retry, run on another one, finds no lock of its session and is refused, and the lock outlives the worker's session, holding the job from everyone (a stranded row).
-- catch: current owner's complete rejected
-- catch: current owner's retry rejected
-- catch: a session lease outlived its session
-- catch: a session lease ended while its session lived
-- topology: pooler-transaction
-- outboxlab: lease=session

-- name: schema
CREATE TABLE outbox_lab (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id text NOT NULL UNIQUE,
    done boolean NOT NULL DEFAULT false,
    generation bigint NOT NULL DEFAULT 0,
    run_at timestamptz NOT NULL DEFAULT statement_timestamp()
);
-- The locks' first key (the suite empties every table before a check, so
-- it is computed, not stored).
CREATE FUNCTION lab_space() RETURNS int LANGUAGE sql STABLE AS $$
    SELECT hashtext(current_schema()) & 2147483647
$$;
-- Whether this session holds job's lock.
CREATE FUNCTION lab_holds(job bigint) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1 FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid()
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND classid = lab_space()::oid
          AND objid = job::oid AND objsubid = 2)
$$;
-- Whether any session holds job's lock (for the state query).
CREATE FUNCTION lab_held(job bigint) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1 FROM pg_locks
        WHERE locktype = 'advisory' AND granted
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND classid = lab_space()::oid
          AND objid = job::oid AND objsubid = 2)
$$;
CREATE FUNCTION lab_claim() RETURNS TABLE (id bigint, event_id text, generation bigint) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    space int := lab_space();
    job record;
BEGIN
    FOR job IN
        SELECT o.id, o.event_id FROM outbox_lab AS o
        WHERE NOT o.done AND o.run_at <= statement_timestamp()
        ORDER BY o.id
    LOOP
        CONTINUE WHEN lab_holds(job.id);
        CONTINUE WHEN NOT pg_try_advisory_lock(space, job.id::int);
        UPDATE outbox_lab AS o SET generation = o.generation + 1
        WHERE o.id = job.id AND NOT o.done AND o.run_at <= statement_timestamp()
        RETURNING o.id, o.event_id, o.generation INTO id, event_id, generation;
        IF FOUND THEN
            RETURN NEXT;
            RETURN;
        END IF;
        PERFORM pg_advisory_unlock(space, job.id::int);
    END LOOP;
END
$$;

-- name: claim
SELECT id, event_id, generation FROM lab_claim();

-- name: complete
WITH finished AS (
    UPDATE outbox_lab SET done = true
    WHERE id = @id AND generation = @generation AND NOT done AND lab_holds(id)
    RETURNING id
)
SELECT id FROM finished
WHERE pg_advisory_unlock(lab_space(), id::int);

-- name: retry
WITH later AS (
    UPDATE outbox_lab SET run_at = statement_timestamp() + interval '1 hour'
    WHERE id = @id AND generation = @generation AND NOT done AND lab_holds(id)
    RETURNING id
)
SELECT id FROM later
WHERE pg_advisory_unlock(lab_space(), id::int);

-- name: due
UPDATE outbox_lab SET run_at = statement_timestamp() - interval '1 second'
WHERE id = @id;

-- name: state
SELECT id, event_id, generation,
       CASE WHEN done THEN 'SENT' WHEN lab_held(id) THEN 'INPROGRESS' ELSE 'READY' END AS status,
       CASE WHEN NOT done AND lab_held(id) THEN false END AS lease_expired,
       run_at <= statement_timestamp() AS due
FROM outbox_lab ORDER BY id;
