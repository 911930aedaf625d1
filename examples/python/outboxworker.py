"""The worker protocol's loop for a relay written with psycopg 3.

The suite (outboxlab check --worker) starts one process per simulated worker
and sends it one JSON request a line on stdin; this module answers each on
stdout (docs/worker-protocol.md). A relay is a class with the methods
claim(conn, worker), complete(conn, row), retry(conn, row) and, optionally,
install(conn), renew(conn, row) and rescue(conn, worker); the loop owns the
one connection, the transactions the suite opens, the timeouts and the
error codes, so that a relay holds nothing but its SQL.

Runs on Debian's python3-psycopg (3.1) with /usr/bin/python3.
"""

import json
import re
import sys
import traceback

import psycopg
from psycopg import pq


class Worker:
    def __init__(self, relay):
        self.relay = relay
        self.conn = None
        self.lost = False  # a connection_lost was answered: only reconnect helps
        self.init = {}

    # The connection: one, named as the suite asks, autocommit, with the
    # timeout enforced by the server.
    def connect(self):
        timeout = max(2, self.init["op_timeout_ms"] // 1000 + 2)
        conn = psycopg.connect(self.init["dsn"], autocommit=True, connect_timeout=timeout,
                               application_name=self.init["application_name"])
        conn.execute("SET search_path TO " + self.init["schema"])
        conn.execute("SET statement_timeout TO %d" % self.init["op_timeout_ms"])
        self.conn = conn

    def drop(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
        self.conn = None

    def handle(self, req):
        t = req["type"]
        if t == "init":
            self.init = req
            try:
                self.connect()
            except psycopg.Error:
                self.conn = None  # connected lazily, at the first request
            feats = ["tx"] + [f for f in ("install", "renew", "rescue") if hasattr(self.relay, f)]
            return {"type": "init_ok", "features": feats, "fence": self.relay.fence}
        if t == "reconnect":
            self.drop()
            self.lost = False
            self.connect()
            return {"type": "ok"}
        if self.lost:
            return error("connection_lost", "the connection was lost; waiting for reconnect")
        if self.conn is None:
            self.connect()
        wait = req.get("may_wait")
        if wait:
            self.conn.execute("SET statement_timeout TO %d" % self.init["wait_timeout_ms"])
        try:
            return self.run(t, req)
        finally:
            if wait and not self.conn.closed and not self.conn.broken:
                self.conn.execute("SET statement_timeout TO %d" % self.init["op_timeout_ms"])

    def run(self, t, req):
        c, r = self.conn, self.relay
        if t == "install":
            r.install(c)
            return {"type": "install_ok"}
        if t == "claim":
            return {"type": "claim_ok", "rows": r.claim(c, self.init["worker"])}
        if t in ("complete", "retry", "renew"):
            return {"type": "ok", "applied": bool(getattr(r, t)(c, req["row"]))}
        if t == "rescue" and hasattr(r, "rescue"):
            r.rescue(c, self.init["worker"])
            return {"type": "ok"}
        if t == "begin":
            c.execute("BEGIN")
            fx = req.get("fixture")
            if fx:
                c.execute(*positional(fx["sql"], fx.get("args") or []))
            return {"type": "ok"}
        if t == "commit":
            if c.info.transaction_status == pq.TransactionStatus.INERROR:
                c.execute("ROLLBACK")
                return error("server_error", "commit of an aborted transaction", "25P02")
            c.execute("COMMIT")
            return {"type": "ok"}
        if t == "rollback":
            c.execute("ROLLBACK")
            return {"type": "ok"}
        return error("unsupported", "no request " + t)


def positional(sql, args):
    """The fixture's $1..$n as psycopg's named placeholders, with their
    values (text, as the contract passes them)."""
    named = re.sub(r"\$(\d+)", lambda m: "%(p" + m.group(1) + ")s", sql.replace("%", "%%"))
    return named, {"p%d" % (i + 1): a for i, a in enumerate(args)}


def error(code, text, sqlstate=None):
    e = {"type": "error", "code": code, "text": text}
    if sqlstate:
        e["sqlstate"] = sqlstate
    return e


def classify(w, exc):
    """An exception as the contract's error: definite only when the server
    refused the statement and the connection is intact."""
    state = getattr(exc, "sqlstate", None)
    if isinstance(exc, psycopg.errors.QueryCanceled):
        return error("timeout", str(exc), state)
    if isinstance(exc, psycopg.Error):
        broken = w.conn is None or w.conn.closed or w.conn.broken
        if broken or not state or state.startswith("08") or state.startswith("57P"):
            w.lost = True
            w.drop()
            return error("connection_lost", str(exc), state)
        return error("server_error", str(exc), state)
    return error("protocol", traceback.format_exc())


def serve(relay):
    w = Worker(relay)
    while True:
        line = sys.stdin.readline()
        if not line:
            return
        req = json.loads(line)
        try:
            reply = w.handle(req)
        except Exception as exc:  # every failure answers; none ends the loop
            reply = classify(w, exc)
            if reply["code"] == "timeout":
                print("timeout:", exc, file=sys.stderr)
        reply["in_reply_to"] = req["id"]
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
