"""The article's leased relay (kill-the-outbox-worker) as a worker for
`outboxlab check --worker`: a claim takes due READY work or an expired
lease, raises the generation and leases the row for 30 seconds; complete
and retry apply only for the claim's generation while its lease is live.

    outboxlab check --worker '/usr/bin/python3 examples/python/leased.py' examples/python/leased.sql

The relay creates its own table (the install feature), in the schema the
suite names: the loop sets search_path to it. The lease is 30 s, longer
than a check, so only the suite's fixtures end one.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import outboxworker  # noqa: E402

SCHEMA = """
CREATE TABLE outbox_lab (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id text NOT NULL UNIQUE,
    status text NOT NULL DEFAULT 'READY'
        CHECK (status IN ('READY', 'INPROGRESS', 'SENT')),
    generation bigint NOT NULL DEFAULT 0,
    lease_until timestamptz,
    next_attempt_at timestamptz NOT NULL DEFAULT statement_timestamp(),
    CHECK ((status = 'INPROGRESS') = (lease_until IS NOT NULL))
)"""

CLAIM = """
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
RETURNING o.id, o.event_id, o.generation"""

COMPLETE = """
UPDATE outbox_lab SET status = 'SENT', lease_until = NULL
WHERE id = %(id)s::bigint
  AND status = 'INPROGRESS'
  AND generation = %(gen)s
  AND lease_until > clock_timestamp()
RETURNING id"""

RETRY = """
UPDATE outbox_lab
SET status = 'READY', lease_until = NULL,
    next_attempt_at = statement_timestamp() + interval '1 minute'
WHERE id = %(id)s::bigint
  AND status = 'INPROGRESS'
  AND generation = %(gen)s
  AND lease_until > clock_timestamp()
RETURNING id"""


class Leased:
    fence = "counter"

    def install(self, conn):
        conn.execute(SCHEMA)

    def claim(self, conn, worker):
        rows = conn.execute(CLAIM).fetchall()
        return [{"id": str(i), "event": e, "gen": g} for i, e, g in rows]

    def complete(self, conn, row):
        return conn.execute(COMPLETE, row).fetchone() is not None

    def retry(self, conn, row):
        return conn.execute(RETRY, row).fetchone() is not None


if __name__ == "__main__":
    outboxworker.serve(Leased())
