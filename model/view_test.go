package model

import (
	"slices"
	"testing"
)

func TestView(t *testing.T) {
	s := play(t, FIFO, "Enqueue(e1) -> ok", "Enqueue(e2) -> ok", "Enqueue(e3) -> ok", "Enqueue(e4) -> ok",
		"w1.Claim() -> claimed e1 gen=1",
		"w2.Claim() -> claimed e2 gen=1", "w2.Complete(e2, gen=1) -> applied",
		"w3.Claim() -> claimed e3 gen=1", "w3.Retry(e3, gen=1) -> applied",
		"Expire(e1) -> ok",
		"w1.Begin() -> claimed e1 gen=2")
	want := []RowView{
		{Event: "e1", Status: InProgress, Gen: 1, HasGen: true, LeaseHeld: true, LeaseExpired: true},
		{Event: "e2", Status: Sent, Gen: 1, HasGen: true},
		{Event: "e3", Status: Ready, Gen: 1, HasGen: true},
		{Event: "e4", Status: Ready, Gen: 0, HasGen: true, Due: true},
	}
	if got := s.View(true); !slices.Equal(got, want) {
		t.Errorf("View(true):\n got %+v\nwant %+v", got, want)
	}
	for i := range want {
		want[i].Gen, want[i].HasGen = 0, false
	}
	if got := s.View(false); !slices.Equal(got, want) {
		t.Errorf("View(false):\n got %+v\nwant %+v", got, want)
	}
}

func TestMatch(t *testing.T) {
	s := play(t, FIFO, "Enqueue(e1) -> ok", "Enqueue(e2) -> ok", "w1.Claim() -> claimed e1 gen=1",
		"w1.Complete(e1, gen=1) -> applied")
	view := s.View(true)
	tests := []struct {
		name   string
		change func(v []RowView)
		hasGen bool
		match  bool
	}{
		{"own view", func([]RowView) {}, true, true},
		{"status differs", func(v []RowView) { v[1].Status = InProgress }, true, false},
		{"event differs", func(v []RowView) { v[1].Event = "e3" }, true, false},
		{"gen differs", func(v []RowView) { v[0].Gen = 2 }, true, false},
		{"gen without generations", func(v []RowView) { v[0].Gen = 7 }, false, true},
		{"lease held differs", func(v []RowView) { v[0].LeaseHeld = true }, true, false},
		{"lease expired outside INPROGRESS", func(v []RowView) { v[0].LeaseExpired = true }, true, true},
		{"due outside READY", func(v []RowView) { v[0].Due = true }, true, true},
		{"due of a READY row", func(v []RowView) { v[1].Due = false }, true, false},
		{"a row missing", func(v []RowView) {}, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			observed := slices.Clone(view)
			tc.change(observed)
			if tc.name == "a row missing" {
				observed = observed[:1]
			}
			got := Match([]State{s, s}, observed, tc.hasGen)
			if want := map[bool]int{true: 1, false: 0}[tc.match]; len(got) != want {
				t.Errorf("Match kept %d states, want %d", len(got), want)
			}
		})
	}
	expired := play(t, FIFO, "Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1", "Expire(e1) -> ok")
	live := play(t, FIFO, "Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1")
	if got := Match([]State{live, expired}, expired.View(true), true); len(got) != 1 || got[0].Key() != expired.Key() {
		t.Errorf("Match told an expired lease from a live one wrongly: %q", keys(got))
	}
}
