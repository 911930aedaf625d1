package worker

import (
	"fmt"

	"github.com/outboxlab/outboxlab/model"
)

// A Record is one operation a worker ran while it drove a history: what
// it called, when (MonoNow), on which backend and epoch, and, once it
// returned, its outcome. Events are numbers: event n is "e<n>", the name
// concurrent's histories give the n-th event enqueued.
type Record struct {
	Kind    model.Kind
	Event   int
	Gen     int64
	Call    int64
	Return  int64 // 0 while Open
	Backend uint32
	Epoch   int64
	Out     model.OutcomeKind
	Grants  []Grant // a claim's rows, in enqueue order
	Fault   string  // why an unknown outcome is unknown, when a fault says
	Open    bool    // called and not returned: the worker died or gave up
}

// Grant is one row a claim returned.
type Grant struct {
	Event int
	Gen   int64
}

// Record words.
const (
	rState = iota // 0 none, 1 open, 2 returned
	rKind
	rEvent
	rGen
	rCall
	rReturn
	rBackend
	rEpoch
	rOut
	rFault
	rGrants // how many; then an event and a gen word each
	recordHead
)

const (
	stateOpen     = 1
	stateReturned = 2
)

var recordFaults = []string{"", "connection cut"}

func (b *Board) recordWords() int { return recordHead + 2*b.events }

func (s Slot) record(i int) int { return s.base + slotWords + failWords + i*s.b.recordWords() }

// Open writes the call of r and returns its index, or -1 when the slot is
// full. The record is counted only once it is whole, and before the
// statement is sent: a worker killed in between had sent nothing.
func (s Slot) Open(r Record) int {
	i := int(s.word(sCount).Load())
	if i >= s.b.records {
		return -1
	}
	at := s.record(i)
	for w, v := range []int64{codeOf(recordKinds, r.Kind), int64(r.Event), r.Gen, r.Call, 0, int64(r.Backend), r.Epoch, 0, 0, 0} {
		s.b.word(at + rKind + w).Store(v)
	}
	s.b.word(at + rState).Store(stateOpen)
	s.word(sCount).Store(int64(i + 1))
	return i
}

// Finish writes record i's return: its outcome at ret, the claim's rows
// and the fault that made it unknown ("" for none).
func (s Slot) Finish(i int, ret int64, out model.OutcomeKind, grants []Grant, fault string) error {
	if len(grants) > s.b.events {
		return fmt.Errorf("board: a claim of %d rows, room for %d", len(grants), s.b.events)
	}
	at := s.record(i)
	s.b.word(at + rReturn).Store(ret)
	s.b.word(at + rOut).Store(codeOf(recordOutcomes, out))
	s.b.word(at + rFault).Store(codeOf(recordFaults, fault))
	s.b.word(at + rGrants).Store(int64(len(grants)))
	for k, g := range grants {
		s.b.word(at + recordHead + 2*k).Store(int64(g.Event))
		s.b.word(at + recordHead + 2*k + 1).Store(g.Gen)
	}
	s.b.word(at + rState).Store(stateReturned)
	return nil
}

// Records reads the slot's records, in the order they were called.
func (s Slot) Records() []Record {
	n := min(int(s.word(sCount).Load()), s.b.records)
	out := make([]Record, 0, n)
	for i := range n {
		at := s.record(i)
		w := func(k int) int64 { return s.b.word(at + k).Load() }
		r := Record{Kind: valueOf(recordKinds, w(rKind)), Event: int(w(rEvent)), Gen: w(rGen),
			Call: w(rCall), Backend: uint32(w(rBackend)), Epoch: w(rEpoch), Open: w(rState) != stateReturned}
		if !r.Open {
			r.Return, r.Out, r.Fault = w(rReturn), valueOf(recordOutcomes, w(rOut)), valueOf(recordFaults, w(rFault))
			for k := range min(int(w(rGrants)), s.b.events) {
				r.Grants = append(r.Grants, Grant{Event: int(w(recordHead + 2*k)), Gen: w(recordHead + 2*k + 1)})
			}
		}
		out = append(out, r)
	}
	return out
}
