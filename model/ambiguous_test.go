package model

import (
	"slices"
	"testing"
)

func TestAmbiguous(t *testing.T) {
	two := []string{"Enqueue(e1) -> ok", "Enqueue(e2) -> ok"}
	claimed := []string{"Enqueue(e1) -> ok", "w1.Claim() -> claimed e1 gen=1"}
	open := []string{"Enqueue(e1) -> ok", "w1.Begin() -> claimed e1 gen=1"}
	tests := []struct {
		name  string
		order Order
		given []string
		op    string
		want  []string // keys, in order
	}{
		{"fifo claim: not taken, or taken by nobody who knows", FIFO, two, "w1.Claim()", []string{
			"order=fifo rows=[e1:READY/0/due e2:READY/0/due] pending=[] claims=[]",
			"order=fifo rows=[e1:INPROGRESS/1/live e2:READY/0/due] pending=[] claims=[]",
		}},
		{"any claim: not taken, or any row taken", Any, two, "w1.Claim()", []string{
			"order=any rows=[e1:READY/0/due e2:READY/0/due] pending=[] claims=[]",
			"order=any rows=[e1:INPROGRESS/1/live e2:READY/0/due] pending=[] claims=[]",
			"order=any rows=[e1:READY/0/due e2:INPROGRESS/1/live] pending=[] claims=[]",
		}},
		{"claim of nothing", FIFO, nil, "w1.Claim()", []string{
			"order=fifo rows=[] pending=[] claims=[]",
		}},
		{"begin: the transaction is lost", FIFO, []string{"Enqueue(e1) -> ok"}, "w1.Begin()", []string{
			"order=fifo rows=[e1:READY/0/due] pending=[] claims=[]",
		}},
		{"commit: rolled back, or committed unknown to the worker", FIFO, open, "w1.Commit()", []string{
			"order=fifo rows=[e1:READY/0/due] pending=[] claims=[]",
			"order=fifo rows=[e1:INPROGRESS/1/live] pending=[] claims=[]",
		}},
		{"commit of an empty claim", FIFO, []string{"w1.Begin() -> empty"}, "w1.Commit()", []string{
			"order=fifo rows=[] pending=[] claims=[]",
		}},
		{"rollback: rolled back either way", FIFO, open, "w1.Rollback()", []string{
			"order=fifo rows=[e1:READY/0/due] pending=[] claims=[]",
		}},
		{"complete: not applied, or applied", FIFO, claimed, "w1.Complete(e1, gen=1)", []string{
			"order=fifo rows=[e1:INPROGRESS/1/live] pending=[] claims=[w1:e1/1]",
			"order=fifo rows=[e1:SENT/1] pending=[] claims=[w1:e1/1]",
		}},
		{"retry: not applied, or applied", FIFO, claimed, "w1.Retry(e1, gen=1)", []string{
			"order=fifo rows=[e1:INPROGRESS/1/live] pending=[] claims=[w1:e1/1]",
			"order=fifo rows=[e1:READY/1] pending=[] claims=[w1:e1/1]",
		}},
		{"renew: the same either way", FIFO, claimed, "w1.Renew(e1, gen=1)", []string{
			"order=fifo rows=[e1:INPROGRESS/1/live] pending=[] claims=[w1:e1/1]",
		}},
		{"stale complete: rejected either way", FIFO, append(slices.Clone(claimed), "Expire(e1) -> ok"), "w1.Complete(e1, gen=1)", []string{
			"order=fifo rows=[e1:INPROGRESS/1] pending=[] claims=[w1:e1/1]",
		}},
		{"enqueue: not inserted, or inserted", FIFO, nil, "Enqueue(e1)", []string{
			"order=fifo rows=[] pending=[] claims=[]",
			"order=fifo rows=[e1:READY/0/due] pending=[] claims=[]",
		}},
		{"kill: as Step", FIFO, open, "w1.Kill()", []string{
			"order=fifo rows=[e1:READY/0/due] pending=[] claims=[]",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := play(t, tc.order, tc.given...)
			before := s.Key()
			got := keys(s.Ambiguous(mustOp(t, tc.op)))
			if !slices.Equal(got, tc.want) {
				t.Errorf("Ambiguous(%s):\n got %q\nwant %q", tc.op, got, tc.want)
			}
			if s.Key() != before {
				t.Errorf("Ambiguous(%s) changed its receiver", tc.op)
			}
		})
	}
}

// An unknown claim is resolved by the next observation, and the row the
// worker never learned of is recovered only after its lease expires.
func TestAmbiguousClaimResolvedByMatch(t *testing.T) {
	s := play(t, Any, "Enqueue(e1) -> ok", "Enqueue(e2) -> ok")
	states := s.Ambiguous(mustOp(t, "w1.Claim()"))
	observed := playFrom(t, s, "w1.Claim() -> claimed e2 gen=1").View(true)
	left := Match(states, observed, true)
	if len(left) != 1 || len(left[0].Claims) != 0 {
		t.Fatalf("Match left %q, want the one state where e2 was taken by nobody who knows", keys(left))
	}
	next := playFrom(t, left[0], "w2.Claim() -> claimed e1 gen=1", "w3.Claim() -> empty", "Expire(e2) -> ok", "w3.Claim() -> claimed e2 gen=2")
	if want := []Claim{{"w2", "e1", 1, 1}, {"w3", "e2", 2, 2}}; !slices.Equal(next.Claims, want) {
		t.Fatalf("claims %v, want %v", next.Claims, want)
	}
}
