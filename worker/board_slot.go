package worker

import (
	"fmt"
	"math"
	"strings"
	"sync/atomic"

	"github.com/outboxlab/outboxlab/model"
)

// Hints: a worker that holds a reclaim open posts the row (its event's
// number, from 1, and the generation it took), so that another worker
// still holding an older claim of it sends its stale outcome while the lock
// is held. Each event has a word for the generation, one for the hint's
// number, so the latest posted is the one read, and one for its poster's
// slot (plus one), whose hints the parent takes down when it kills it.

func (b *Board) hintWords(event int) (gen, seq, owner int) {
	at := headerWords + 3*(event-1)
	return at, at + 1, at + 2
}

// PostHint posts that event's row is held open at gen by slot's worker.
func (b *Board) PostHint(event int, gen int64, slot int) {
	if event < 1 || event > b.events {
		return
	}
	g, s, o := b.hintWords(event)
	b.word(g).Store(gen)
	b.word(o).Store(int64(slot + 1))
	b.word(s).Store(b.word(wHintSeq).Add(1))
}

// ClearHint takes event's hint down (its holder committed or rolled back).
func (b *Board) ClearHint(event int) {
	if event < 1 || event > b.events {
		return
	}
	g, s, o := b.hintWords(event)
	b.word(s).Store(0)
	b.word(g).Store(0)
	b.word(o).Store(0)
}

// ClearHintsOf takes down the hints slot's worker posted: it was killed,
// and its transaction with it.
func (b *Board) ClearHintsOf(slot int) {
	for e := 1; e <= b.events; e++ {
		if _, _, o := b.hintWords(e); b.word(o).Load() == int64(slot+1) {
			b.ClearHint(e)
		}
	}
}

// Hint is the latest posted hint still up.
func (b *Board) Hint() (event int, gen int64, ok bool) {
	var best int64
	for e := 1; e <= b.events; e++ {
		g, s, _ := b.hintWords(e)
		if seq, gn := b.word(s).Load(), b.word(g).Load(); seq > best && gn != 0 {
			best, event, gen, ok = seq, e, gn, true
		}
	}
	return event, gen, ok
}

// CountClaim counts one more acknowledged claim of event and returns the
// count: the generation the suite sends a protocol without one.
func (b *Board) CountClaim(event int) int64 {
	if event < 1 || event > b.events {
		return math.MaxInt64
	}
	return b.word(headerWords + 3*b.events + event - 1).Add(1)
}

// A Slot is one worker's part of the board.
type Slot struct {
	b     *Board
	index int
	base  int
}

// Slot is worker i's part.
func (b *Board) Slot(i int) Slot { return Slot{b: b, index: i, base: b.headerSize() + i*b.slotSize()} }

// Index is the slot's number on its board.
func (s Slot) Index() int { return s.index }

// SetFailure writes the failure the worker saw, before it stops the
// history and before it writes the failing record: a kill after this
// cannot lose it. Rule and detail, truncated to failWords.
func (s Slot) SetFailure(rule, detail string) {
	text := rule + "\n" + detail
	at := 8 * (s.base + slotWords)
	n := copy(s.b.mem[at:at+8*failWords], text)
	s.word(sFailLen).Store(int64(n))
}

// Failure is the failure the worker wrote, if any.
func (s Slot) Failure() (rule, detail string, ok bool) {
	n := int(s.word(sFailLen).Load())
	if n <= 0 {
		return "", "", false
	}
	at := 8 * (s.base + slotWords)
	rule, detail, _ = strings.Cut(string(s.b.mem[at:at+min(n, 8*failWords)]), "\n")
	return rule, detail, true
}

func (s Slot) word(i int) *atomic.Int64 { return s.b.word(s.base + i) }

// Taint marks that a fault may hit the worker's current or next statement.
func (s Slot) Taint() { s.word(sTaint).Store(1) }

// ClearTaint forgets the marks (a new history).
func (s Slot) ClearTaint() { s.word(sTaint).Store(0) }

// Arm marks whether a network fault is armed on the worker's proxy.
func (s Slot) Arm(on bool) { s.word(sArmed).Store(boolWord(on)) }

// Faulted takes the taint at the end of an operation: whether a fault may
// explain its error. While a fault is still armed the taint stays for the
// next operation, and so it does after an undo until an operation ends (a
// connection the fault broke fails only when next used).
func (s Slot) Faulted() bool {
	hit := s.word(sTaint).Swap(0) != 0
	if s.word(sArmed).Load() != 0 {
		s.word(sTaint).Store(1)
		return true
	}
	return hit
}

// Backend is the server pid of the worker's connection (0: none).
func (s Slot) Backend() uint32 { return uint32(s.word(sBackend).Load()) }

// SetBackend publishes the worker's backend, for the fault loop.
func (s Slot) SetBackend(pid uint32) { s.word(sBackend).Store(int64(pid)) }

func boolWord(on bool) int64 {
	if on {
		return 1
	}
	return 0
}

// codes of the kinds and outcomes a record holds (a word each).
var (
	recordKinds    = []model.Kind{"", model.ClaimOp, model.Begin, model.Commit, model.Rollback, model.Complete, model.Retry, model.Renew}
	recordOutcomes = []model.OutcomeKind{"", model.Empty, model.Claimed, model.Applied, model.Rejected, model.OK, model.Unknown}
)

// codeOf is v's code; a value with none is this package's bug.
func codeOf[T comparable](list []T, v T) int64 {
	for i, x := range list {
		if x == v {
			return int64(i)
		}
	}
	panic(fmt.Sprintf("board: %v has no code", v))
}

func valueOf[T any](list []T, code int64) T {
	var zero T
	if code < 0 || code >= int64(len(list)) {
		return zero
	}
	return list[code]
}
