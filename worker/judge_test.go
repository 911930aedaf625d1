package worker

import (
	"testing"

	"github.com/outboxlab/outboxlab/model"
)

// TestJudge: an outcome is unknown only when a fault was marked; any
// other error is the protocol's, named by what happened.
func TestJudge(t *testing.T) {
	complete := model.Op{Kind: model.Complete, Worker: "w1", Event: "e1", Gen: 1}
	for _, c := range []struct {
		name    string
		resp    Response
		faulted bool
		fate    Fate
		rule    string
	}{
		{"an answer", Response{Applied: true}, false, Known, ""},
		{"an answer with a fault marked", Response{}, true, Known, ""},
		{"a result the section may not return", Response{Err: "complete returned more than one row", Protocol: true}, true, Broken, "complete returned more than one row"},
		{"a server error, fault or not", Response{Err: "ERROR: division by zero", ServerErr: true}, true, Broken, "complete failed with a server error"},
		{"a broken connection with a fault", Response{Err: "unexpected EOF"}, true, Lost, ""},
		{"a broken connection with none", Response{Err: "unexpected EOF"}, false, Broken, "complete lost its connection with no fault injected"},
		{"a timeout with a fault", Response{Err: "context deadline exceeded", Timeout: true}, true, Lost, ""},
		{"a timeout with none", Response{Err: "context deadline exceeded", Timeout: true}, false, Broken, "complete timed out"},
	} {
		fate, rule, detail := Judge(complete, c.resp, c.faulted)
		if fate != c.fate || rule != c.rule || (fate == Broken) != (detail != "") {
			t.Errorf("%s: %v %q %q, want %v %q", c.name, fate, rule, detail, c.fate, c.rule)
		}
	}
}
