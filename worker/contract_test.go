package worker

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/workerproto"
)

// A protocol's failure crosses the worker protocol as the contract's code
// and its rule as data: a one-row claim that returns two rows is the
// rule "claim returned more than one row" whatever the count in its text,
// and the connection stays (a definite failure, no reconnect).
func TestGoWorkerSendsTheRuleAsData(t *testing.T) {
	_, w := setup(t, strings.Replace(v2Protocol, "batch=2", "batch=1", 1))
	resp := do(t, w, Request{Op: "claim"})
	if !resp.Protocol || resp.Err != "claim returned 2 rows" || resp.Rule != "claim returned more than one row" {
		t.Fatalf("claim = %+v, want the protocol's failure with its rule", resp)
	}
	if w.lost || w.Backend == 0 {
		t.Fatalf("after a protocol error: lost=%v backend=%d, want the connection kept", w.lost, w.Backend)
	}
}

// The Go worker is a worker of the contract: init_ok lists the optional
// requests and the extensions it serves, and a request type it does not
// know is answered unsupported, not taken for another.
func TestGoWorkerAnswersAsTheContractSays(t *testing.T) {
	_, w := setup(t, v2Protocol)
	r, err := w.c.Call(workerproto.Request{Type: "no_such_request"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.Type != "error" || r.Code != workerproto.CodeUnsupported {
		t.Fatalf("an unknown request's reply = %+v, want an unsupported error", r)
	}
	r, err = w.c.Call(workerproto.Request{Type: workerproto.Claim}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var row map[string]any
	if r.Type != "claim_ok" || len(r.Rows) != 2 || json.Unmarshal(r.Rows[0], &row) != nil ||
		row["id"] != "1" || row["event"] != "e1" || row["gen"] != 1.0 || r.Backend == 0 {
		t.Fatalf("claim's reply = %+v (%v), want claim_ok with the rows and the backend", r, row)
	}
	r, err = w.c.Call(workerproto.Request{Type: workerproto.Complete, Row: r.Rows[0]}, 5*time.Second)
	if err != nil || r.Type != "ok" || r.Applied == nil || !*r.Applied {
		t.Fatalf("complete of the claimed row = %+v, %v; want ok, applied", r, err)
	}
}
