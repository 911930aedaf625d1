"""A worker that breaks the worker protocol on purpose, one way per MODE
(its first argument), for the tests of the verdicts a bad worker gets. It
is the Python leased relay (examples/python) until the misbehaviour.

  notjson     its claim answers with a line that is not JSON
  wrongid     its claim's reply names a request never sent
  wrongtype   its claim is answered with a reply of type ok
  exit        it exits at its first claim
  hang        its claim never answers
  secondconn  it opens a second connection at init and keeps it
  nosqlstate  its complete fails with a server_error without a SQLSTATE
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python"))
import outboxworker  # noqa: E402
import psycopg  # noqa: E402
from leased import Leased  # noqa: E402

MODE = sys.argv[1]


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class Broken(outboxworker.Worker):
    def handle(self, req):
        t = req["type"]
        if t == "init" and MODE == "secondconn":
            reply = super().handle(req)
            self.extra = psycopg.connect(req["dsn"], autocommit=True, application_name=req["application_name"])
            print("broken worker: a second connection", file=sys.stderr, flush=True)
            return reply
        if t == "claim" and MODE in ("notjson", "wrongid", "wrongtype", "exit", "hang"):
            print("broken worker: " + MODE + " at claim", file=sys.stderr, flush=True)
            if MODE == "notjson":
                say("claimed one row, see you")
            elif MODE == "wrongid":
                say(json.dumps({"in_reply_to": req["id"] + 5, "type": "claim_ok", "rows": []}))
            elif MODE == "wrongtype":
                say(json.dumps({"in_reply_to": req["id"], "type": "ok"}))
            elif MODE == "exit":
                sys.exit(4)
            else:
                time.sleep(3600)
            return None
        if t == "complete" and MODE == "nosqlstate":
            print("broken worker: complete without a sqlstate", file=sys.stderr, flush=True)
            return outboxworker.error("server_error", "something went wrong")
        return super().handle(req)


def serve():
    w = Broken(Leased())
    while True:
        line = sys.stdin.readline()
        if not line:
            return
        req = json.loads(line)
        try:
            reply = w.handle(req)
        except Exception as exc:
            reply = outboxworker.classify(w, exc)
        if reply is None:
            continue
        reply["in_reply_to"] = req["id"]
        say(json.dumps(reply))


if __name__ == "__main__":
    serve()
