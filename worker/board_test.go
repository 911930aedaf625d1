package worker

import (
	"reflect"
	"strings"
	"testing"

	"github.com/outboxlab/outboxlab/model"
)

// The board in one process: what a worker writes is what the parent
// reads, and the marks mean what the fault loop and the budget need.

func TestBoardRecordsReadAsWritten(t *testing.T) {
	b, err := NewBoard(2, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Start(10, MonoNow()+1e9)
	s := b.Slot(1)
	i := s.Open(Record{Kind: model.Begin, Call: 5, Backend: 77, Epoch: 2})
	if err := s.Finish(i, 9, model.Claimed, []Grant{{Event: 1, Gen: 3}, {Event: 3, Gen: 1}}, ""); err != nil {
		t.Fatal(err)
	}
	s.Open(Record{Kind: model.Complete, Event: 1, Gen: 3, Call: 10, Backend: 77, Epoch: 2})
	want := []Record{
		{Kind: model.Begin, Call: 5, Return: 9, Backend: 77, Epoch: 2, Out: model.Claimed, Grants: []Grant{{Event: 1, Gen: 3}, {Event: 3, Gen: 1}}},
		{Kind: model.Complete, Event: 1, Gen: 3, Call: 10, Backend: 77, Epoch: 2, Open: true},
	}
	if got := s.Records(); !reflect.DeepEqual(got, want) {
		t.Fatalf("records = %+v\nwant %+v", got, want)
	}
	if got := b.Slot(0).Records(); len(got) != 0 {
		t.Errorf("the other slot has %d records", len(got))
	}
	if s.Open(Record{Kind: model.ClaimOp}) != -1 {
		t.Error("a full slot took a third record")
	}
	if err := s.Finish(0, 9, model.Claimed, make([]Grant, 4), ""); err == nil {
		t.Error("a claim of four rows fit in room for three")
	}
	b.Start(10, MonoNow()+1e9)
	if got := s.Records(); len(got) != 0 {
		t.Errorf("a new history starts with %d records", len(got))
	}

	// The worker's side maps the same memory by its path.
	w, err := OpenBoard(b.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Slot(1).Open(Record{Kind: model.ClaimOp, Call: 1})
	if got := s.Records(); len(got) != 1 || got[0].Kind != model.ClaimOp {
		t.Errorf("the parent reads %+v after the worker's open", got)
	}
}

func TestBoardMarks(t *testing.T) {
	b, err := NewBoard(1, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Start(2, MonoNow()+60e9)
	if !b.Take() || !b.Take() || b.Take() || b.Left() {
		t.Error("a budget of two gave other than two operations")
	}
	b.Start(5, MonoNow()+60e9)
	b.Stop()
	if b.Take() || b.Left() {
		t.Error("a stopped history went on")
	}
	b.Start(5, MonoNow()-1)
	if b.Take() {
		t.Error("a history past its end went on")
	}

	if _, _, ok := b.Hint(); ok {
		t.Error("a hint on a new board")
	}
	b.PostHint(3, 2, 0)
	b.PostHint(1, 4, 0)
	b.PostHint(2, 5, 1)
	b.ClearHint(2)
	if e, g, _ := b.Hint(); e != 1 || g != 4 {
		t.Errorf("hint = e%d gen %d, want the latest still up, e1 gen 4", e, g)
	}
	b.ClearHint(1)
	if e, g, _ := b.Hint(); e != 3 || g != 2 {
		t.Errorf("hint after clearing e1 = e%d gen %d, want e3 gen 2", e, g)
	}
	b.PostHint(2, 5, 1)
	b.ClearHintsOf(0) // slot 0's worker was killed
	if e, g, _ := b.Hint(); e != 2 || g != 5 {
		t.Errorf("after slot 0's hints went: e%d gen %d, want slot 1's e2 gen 5", e, g)
	}
	b.ClearHintsOf(1)
	if _, _, ok := b.Hint(); ok {
		t.Error("a hint left after both posters' went")
	}
	if b.CountClaim(2) != 1 || b.CountClaim(2) != 2 || b.CountClaim(1) != 1 {
		t.Error("claim counts are not per event")
	}

	s := b.Slot(0)
	if _, _, ok := s.Failure(); ok {
		t.Error("a failure on a new board")
	}
	s.SetFailure("claim returned more than one row", "w1.Claim() returned\ntwo rows")
	if rule, detail, _ := s.Failure(); rule != "claim returned more than one row" || detail != "w1.Claim() returned\ntwo rows" {
		t.Errorf("failure = %q, %q", rule, detail)
	}
	s.SetFailure("long", strings.Repeat("x", 5000))
	if _, detail, _ := s.Failure(); len(detail) != 8*failWords-len("long\n") {
		t.Errorf("a long failure kept %d bytes of detail", len(detail))
	}
	b.Start(5, MonoNow()+60e9)
	if _, _, ok := s.Failure(); ok {
		t.Error("a failure outlived its history")
	}
	if s.Faulted() {
		t.Error("faulted with no mark")
	}
	s.Taint()
	if !s.Faulted() || s.Faulted() {
		t.Error("a taint is not taken by exactly one operation")
	}
	s.Arm(true)
	if !s.Faulted() || !s.Faulted() {
		t.Error("an armed fault did not taint every operation")
	}
	s.Arm(false)
	if !s.Faulted() || s.Faulted() {
		t.Error("after the undo, the next operation alone is not tainted")
	}
}
