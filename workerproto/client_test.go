package workerproto

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A worker that answers its first request late, after the suite gave up
// on it, then the second at once: the late reply (to id 1) is discarded,
// never taken as the answer to request 2.
const lateWorker = `
import json, sys, time
for line in sys.stdin:
    req = json.loads(line)
    if req["id"] == 1:
        time.sleep(0.5)
        print(json.dumps({"in_reply_to": 1, "type": "claim_ok", "rows": [{"id": "1", "event": "late", "gen": 1}]}), flush=True)
        continue
    print(json.dumps({"in_reply_to": req["id"], "type": "claim_ok", "rows": []}), flush=True)
`

func TestLateReplyIsDiscarded(t *testing.T) {
	c, err := Start("/usr/bin/python3 -c '"+lateWorker+"'", "w1", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Kill(true)
	if _, err := c.Call(Request{Type: Claim}, 100*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("first claim: %v, want a timeout", err)
	}
	r, err := c.Call(Request{Type: Claim}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if *r.InReplyTo != 2 || len(r.Rows) != 0 {
		t.Fatalf("second claim's reply %+v: the late reply to the first was taken for it", r)
	}
}

// An exit before init_ok is the worker's failure, with its stderr.
func TestExitAtInit(t *testing.T) {
	c, err := Start(`/bin/sh -c 'echo cannot find my database >&2; exit 3'`, "w2", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Kill(true)
	_, err = c.Init(Config{Directives: Directives{Fence: "counter"}})
	var e *Error
	if !errors.As(err, &e) || e.Problem != "the process exited" || !strings.Contains(e.Stderr, "cannot find my database") {
		t.Fatalf("init of a worker that exits: %v", err)
	}
	if !strings.Contains(err.Error(), "worker w2") || !strings.Contains(err.Error(), "init request") {
		t.Errorf("the error does not name the worker and the request: %v", err)
	}
}

// The contract's table: which error replies leave the outcome unknown.
func TestIndefinite(t *testing.T) {
	for _, tc := range []struct {
		r    Reply
		want bool
	}{
		{Reply{Code: CodeServerError, SQLState: "40001"}, false},
		{Reply{Code: CodeServerError, SQLState: "23505"}, false},
		{Reply{Code: CodeServerError}, true},
		{Reply{Code: CodeServerError, SQLState: "08006"}, true},
		{Reply{Code: CodeServerError, SQLState: "57014"}, true},
		{Reply{Code: CodeServerError, SQLState: "57P01"}, true},
		{Reply{Code: CodeConnectionLost}, true},
		{Reply{Code: CodeTimeout}, true},
		{Reply{Code: CodeProtocol}, false},
		{Reply{Code: CodeUnsupported}, false},
	} {
		if got := Indefinite(tc.r); got != tc.want {
			t.Errorf("Indefinite(%s %q) = %v, want %v", tc.r.Code, tc.r.SQLState, got, tc.want)
		}
	}
}
