-- Library: pgmq (PostgreSQL message queue extension in the style of AWS SQS: visibility timeout, read counter, delete or archive)
-- Repository: https://github.com/pgmq/pgmq (formerly tembo-io/pgmq)
-- Commit: c8575e31880ac0817b2c81d671e683bb1b54d882 (git describe v1.5.1-13-gc8575e3; pgmq.control default_version 1.5.1)
-- Source file and functions (SQL copied from the FORMAT() templates at that commit):
--   pgmq-extension/sql/pgmq.sql pgmq.create_non_partitioned (the q_ and a_ tables and indexes) -> schema
--   pgmq-extension/sql/pgmq.sql pgmq.send(queue_name, msg)   (-> send(queue, msg, NULL, clock_timestamp())) -> enqueue
--   pgmq-extension/sql/pgmq.sql pgmq.read(queue_name, vt, qty, conditional)                      -> claim
--   pgmq-extension/sql/pgmq.sql pgmq.archive(queue_name, msg_id)                                  -> complete
--   pgmq-extension/sql/pgmq.sql pgmq.set_vt(queue_name, msg_id, vt)                               -> retry, renew
--
-- How pgmq works: a message is a row of q_<queue> with a visibility time vt. read() takes the
-- lowest msg_ids whose vt has passed (FOR UPDATE SKIP LOCKED), sets vt = now + the visibility
-- timeout the caller passes and bumps read_ct. The consumer then deletes or archives the message
-- by msg_id (archive moves it to a_<queue>); if it does neither, the message simply becomes
-- visible again when vt passes and the next read takes it: there is no reaper and no owner.
-- set_vt(msg_id, seconds) moves vt: it is how a consumer extends its visibility timeout and how
-- it defers a message for a backoff. None of delete, archive or set_vt checks read_ct or vt, and
-- pgmq has no attempt budget or dead-letter state (applications compare read_ct themselves).
--
-- Adaptations:
--   - The queue name is fixed to 'outbox': the FORMAT()ed table names are q_outbox and a_outbox,
--     unqualified (the suite runs in its own schema on search_path; no pgmq schema, no meta row).
--   - The event id lives in the message: enqueue sends jsonb_build_object('event_id', @event_id);
--     claim returns message->>'event_id' AS event_id in place of the message_record columns.
--   - generation = read_ct, which read() raises by one on every read; nothing checks it.
--   - claim: read('outbox', vt => 30, qty => 2, conditional => '{}'): pgmq has no default
--     visibility timeout, 30 seconds is chosen (lease=30s); batch=2 (qty is the caller's; 1 is the
--     usual). The %L-formatted values are written as the literals FORMAT produces.
--   - complete: archive('outbox', @id), the function's CTE statement as is (it already returns
--     msg_id when it applied). state reads the archive table as SENT, so done=keep. pgmq.delete
--     is the same DELETE ... WHERE msg_id = $1 without the archive insert, and is judged the same.
--   - retry: set_vt('outbox', @id, 60), a 60-second backoff. pgmq cannot tell a deferred message
--     from one being processed (both are rows with vt in the future), so the retry's UPDATE is
--     wrapped in a CTE that also writes (msg_id, read_ct) to outboxlab_backoff, a table of this
--     file's own that only the state query reads: a message whose read_ct is the one recorded there
--     is READY (waiting for its backoff), not INPROGRESS. No library statement reads it.
--   - renew: set_vt('outbox', @id, 30), the library's way of extending a visibility timeout.
--   - No rescue (pgmq has none: read() itself takes messages whose vt has passed), no
--     max_attempts (pgmq has no attempt budget and no DEAD state).
--   - policy=lenient: archive/delete/set_vt never look at vt, so a consumer whose timeout ran out
--     still succeeds until another read takes the message, which lenient allows.
--   - States: a_outbox row -> SENT; q_outbox row with read_ct = 0, or with its read_ct recorded
--     in outboxlab_backoff -> READY (due = vt <= clock_timestamp()); any other q_outbox row ->
--     INPROGRESS (lease_expired = vt <= clock_timestamp(), the test read() applies).
-- The properties this SQL breaks, pinned by TestLibraryProfiles
-- (outboxlab check --profile --faults=false; docs/libraries.md):
-- profile: fencing strict_expiry
-- outboxlab: order=fifo
-- outboxlab: batch=2
-- outboxlab: lease=30s
-- outboxlab: policy=lenient

-- name: schema
CREATE TABLE IF NOT EXISTS q_outbox (
    msg_id BIGINT PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
    read_ct INT DEFAULT 0 NOT NULL,
    enqueued_at TIMESTAMP WITH TIME ZONE DEFAULT now() NOT NULL,
    vt TIMESTAMP WITH TIME ZONE NOT NULL,
    message JSONB,
    headers JSONB
);
CREATE TABLE IF NOT EXISTS a_outbox (
  msg_id BIGINT PRIMARY KEY,
  read_ct INT DEFAULT 0 NOT NULL,
  enqueued_at TIMESTAMP WITH TIME ZONE DEFAULT now() NOT NULL,
  archived_at TIMESTAMP WITH TIME ZONE DEFAULT now() NOT NULL,
  vt TIMESTAMP WITH TIME ZONE NOT NULL,
  message JSONB,
  headers JSONB
);
CREATE INDEX IF NOT EXISTS q_outbox_vt_idx ON q_outbox (vt ASC);
CREATE INDEX IF NOT EXISTS archived_at_idx_outbox ON a_outbox (archived_at);
-- outboxlab's own observation table (not pgmq's): which read a retry deferred.
CREATE TABLE outboxlab_backoff (
  msg_id BIGINT PRIMARY KEY,
  read_ct INT NOT NULL
);

-- name: enqueue
INSERT INTO q_outbox (vt, message, headers)
VALUES (clock_timestamp(), jsonb_build_object('event_id', @event_id::text), NULL)
RETURNING msg_id;

-- name: claim
WITH cte AS
(
    SELECT msg_id
    FROM q_outbox
    WHERE vt <= clock_timestamp() AND CASE
        WHEN '{}' != '{}'::jsonb THEN (message @> '{}')::integer
        ELSE 1
    END = 1
    ORDER BY msg_id ASC
    LIMIT 2
    FOR UPDATE SKIP LOCKED
)
UPDATE q_outbox m
SET
    vt = clock_timestamp() + '00:00:30',
    read_ct = read_ct + 1
FROM cte
WHERE m.msg_id = cte.msg_id
RETURNING m.msg_id AS id, m.message->>'event_id' AS event_id, m.read_ct::bigint AS generation;

-- name: complete
WITH archived AS (
    DELETE FROM q_outbox
    WHERE msg_id = @id
    RETURNING msg_id, vt, read_ct, enqueued_at, message, headers
)
INSERT INTO a_outbox (msg_id, vt, read_ct, enqueued_at, message, headers)
SELECT msg_id, vt, read_ct, enqueued_at, message, headers
FROM archived
RETURNING msg_id;

-- name: retry
WITH set_vt AS (
    UPDATE q_outbox
    SET vt = (clock_timestamp() + '00:01:00')
    WHERE msg_id = @id
    RETURNING *
), backoff AS (
    INSERT INTO outboxlab_backoff (msg_id, read_ct)
    SELECT msg_id, read_ct FROM set_vt
    ON CONFLICT (msg_id) DO UPDATE SET read_ct = EXCLUDED.read_ct
)
SELECT msg_id FROM set_vt;

-- name: renew
UPDATE q_outbox
SET vt = (clock_timestamp() + '00:00:30')
WHERE msg_id = @id
RETURNING *;

-- name: state
SELECT q.msg_id AS id, q.message->>'event_id' AS event_id,
       CASE WHEN q.read_ct = 0 OR b.read_ct = q.read_ct THEN 'READY'
            ELSE 'INPROGRESS' END AS status,
       q.read_ct::bigint AS generation,
       CASE WHEN q.read_ct = 0 OR b.read_ct = q.read_ct THEN NULL
            ELSE q.vt <= clock_timestamp() END AS lease_expired,
       q.vt <= clock_timestamp() AS due
FROM q_outbox q LEFT JOIN outboxlab_backoff b ON b.msg_id = q.msg_id
UNION ALL
SELECT a.msg_id, a.message->>'event_id', 'SENT', a.read_ct::bigint, NULL, true
FROM a_outbox a
ORDER BY id;

-- name: expire
UPDATE q_outbox SET vt = clock_timestamp() - interval '1 second'
WHERE msg_id = @id

-- name: due
UPDATE q_outbox SET vt = clock_timestamp() - interval '1 second'
WHERE msg_id = @id

-- name: age
UPDATE q_outbox SET vt = vt - make_interval(secs => @seconds)
WHERE msg_id = @id
