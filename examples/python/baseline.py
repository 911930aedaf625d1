"""The article's unsafe baseline as a worker: a claim selects only due READY
rows, so a claim a dead worker abandoned is never selected again, and
complete and retry update by id alone, so a stale owner overwrites a newer
claim. `outboxlab check --worker` must fail it, with the article's reasons.

    outboxlab check --worker '/usr/bin/python3 examples/python/baseline.py' examples/python/leased.sql
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import outboxworker  # noqa: E402
from leased import Leased  # noqa: E402

CLAIM = """
WITH candidate AS (
    SELECT id FROM outbox_lab
    WHERE status = 'READY'
      AND next_attempt_at <= statement_timestamp()
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
RETURNING id"""

RETRY = """
UPDATE outbox_lab
SET status = 'READY', lease_until = NULL,
    next_attempt_at = statement_timestamp() + interval '1 minute'
WHERE id = %(id)s::bigint
RETURNING id"""


class Baseline(Leased):
    def claim(self, conn, worker):
        rows = conn.execute(CLAIM).fetchall()
        return [{"id": str(i), "event": e, "gen": g} for i, e, g in rows]

    def complete(self, conn, row):
        return conn.execute(COMPLETE, row).fetchone() is not None

    def retry(self, conn, row):
        return conn.execute(RETRY, row).fetchone() is not None


if __name__ == "__main__":
    outboxworker.serve(Baseline())
