package concurrent

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
)

// held is a claim a worker received: what it sends its outcomes with.
type held struct {
	event string
	gen   int64
	id    string
}

// drive is one worker's part of a history: claims in autocommit and in
// open transactions (held a moment, then committed or rolled back),
// completes, retries and renews of its claims, the stale ones included,
// until the history's budget or time runs out. It aims at the race a
// sequential run cannot show: when another worker holds a reclaim open, a
// worker that still holds an older claim of that row sends its stale
// outcome at once, so that it waits behind the reclaim's lock.
func (h *history) drive(a *actor, rng *rand.Rand) {
	var claims []held
	for h.take() {
		if e, ok := h.hints.get(); ok {
			if c, found := olderClaim(claims, e); found && rng.IntN(5) > 0 {
				if !h.staleOutcome(a, c, rng) {
					return
				}
				continue
			}
		}
		n := rng.IntN(100)
		switch {
		case n < 30 || n >= 50 && len(claims) == 0:
			got, ok := h.claim(a)
			if !ok {
				return
			}
			claims = keep(claims, got)
		case n < 50:
			got, ok := h.claimInTx(a, rng)
			if !ok {
				return
			}
			claims = keep(claims, got)
		default:
			c := claims[len(claims)-1]
			if rng.IntN(2) == 0 {
				c = claims[rng.IntN(len(claims))]
			}
			if !h.outcome(a, c, rng) {
				return
			}
		}
		if !a.alive() {
			claims = nil // a new process remembers nothing
		}
	}
}

// keep adds got to the claims a worker remembers (the latest few).
func keep(claims, got []held) []held {
	claims = append(claims, got...)
	if len(claims) > 8 {
		claims = claims[len(claims)-8:]
	}
	return claims
}

func olderClaim(claims []held, e hint) (held, bool) {
	for i := len(claims) - 1; i >= 0; i-- {
		if c := claims[i]; c.event == e.event && c.gen < e.gen {
			return c, true
		}
	}
	return held{}, false
}

// claim runs an autocommit claim and returns the rows it took.
func (h *history) claim(a *actor) ([]held, bool) {
	out, resp, ok := h.do(a, model.Op{Kind: model.ClaimOp, Worker: a.name}, worker.Request{Op: "claim"})
	if !ok || out.Kind != model.Claimed {
		return nil, ok
	}
	return h.acknowledge(resp.Rows), true
}

// claimInTx claims inside a transaction, holds it open a moment (posting
// a hint for each row it reclaimed), then commits or, once in seven,
// rolls back.
func (h *history) claimInTx(a *actor, rng *rand.Rand) ([]held, bool) {
	out, resp, ok := h.do(a, model.Op{Kind: model.Begin, Worker: a.name}, worker.Request{Op: "begin"})
	if !ok || out.Kind == model.Unknown {
		return nil, ok
	}
	for _, g := range out.Grants() {
		switch {
		case !h.hasGen():
			h.hints.post(hint{event: g.Event, gen: math.MaxInt64}) // any older claim is stale
		case g.Gen > 1:
			h.hints.post(hint{event: g.Event, gen: g.Gen})
		}
	}
	if h.r.cfg.Hold > 0 {
		time.Sleep(time.Duration(rng.Int64N(int64(h.r.cfg.Hold))))
	}
	kind, req := model.Commit, "commit"
	if rng.IntN(7) == 0 {
		kind, req = model.Rollback, "rollback"
	}
	end, _, ok := h.do(a, model.Op{Kind: kind, Worker: a.name}, worker.Request{Op: req})
	for _, g := range out.Grants() {
		h.hints.clear(g.Event)
	}
	if !ok || kind == model.Rollback || end.Kind != model.OK {
		return nil, ok
	}
	return h.acknowledge(resp.Rows), true
}

// acknowledge turns a claim's rows into held claims. A protocol without a
// generation is sent the suite's own count of claims on the row; should
// that count be off (a claim whose reply was lost), the protocol and the
// model both compare it with the true count and both refuse.
func (h *history) acknowledge(rows []worker.ClaimRow) []held {
	var out []held
	for _, r := range sortedRows(rows) {
		gen := r.Gen
		if !h.hasGen() {
			gen = h.countClaim(r.Event)
		}
		out = append(out, held{event: r.Event, gen: gen, id: r.ID})
	}
	return out
}

// staleOutcome sends a complete, a retry or a renew for c, each as often:
// the outcome aimed at a reclaim's open transaction.
func (h *history) staleOutcome(a *actor, c held, rng *rand.Rand) bool {
	kinds := []model.Kind{model.Complete, model.Retry}
	if h.r.inst.Proto.Has(sut.Renew) {
		kinds = append(kinds, model.Renew)
	}
	return h.send(a, c, kinds[rng.IntN(len(kinds))])
}

// outcome sends a complete (most often), a retry or a renew for c.
func (h *history) outcome(a *actor, c held, rng *rand.Rand) bool {
	kind := model.Complete
	switch n := rng.IntN(20); {
	case n < 5:
		kind = model.Retry
	case n < 9 && h.r.inst.Proto.Has(sut.Renew):
		kind = model.Renew
	}
	return h.send(a, c, kind)
}

// send runs the outcome kind (complete, retry or renew) of claim c.
func (h *history) send(a *actor, c held, kind model.Kind) bool {
	section := map[model.Kind]string{model.Complete: sut.Complete, model.Retry: sut.Retry, model.Renew: sut.Renew}[kind]
	op := model.Op{Kind: kind, Worker: a.name, Event: c.event, Gen: c.gen}
	_, _, ok := h.do(a, op, worker.Request{Op: section, ID: c.id, Gen: c.gen})
	return ok
}

func sortedRows(rows []worker.ClaimRow) []worker.ClaimRow {
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b worker.ClaimRow) int { return cmp.Compare(eventIndex(a.Event), eventIndex(b.Event)) })
	return rows
}

// eventIndex is an event's enqueue position: events are e1, e2, ... in
// enqueue order; an event the run never enqueued goes last.
func eventIndex(e string) int {
	if len(e) > 1 && e[0] == 'e' {
		if n, err := strconv.Atoi(e[1:]); err == nil {
			return n
		}
	}
	return 1 << 30
}

// hint is a reclaim held open: event's row at gen, locked until commit.
type hint struct {
	event string
	gen   int64
}

// hints is the board where a worker holding a reclaim open tells the
// others, so that a stale owner's outcome runs while the lock is held.
type hints struct {
	mu   sync.Mutex
	list []hint
}

func (b *hints) post(e hint) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.list = append(b.list, e)
}

func (b *hints) clear(event string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.list = slices.DeleteFunc(b.list, func(e hint) bool { return e.event == event })
}

func (b *hints) get() (hint, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.list) == 0 {
		return hint{}, false
	}
	return b.list[len(b.list)-1], true
}
