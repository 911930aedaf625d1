package concurrent

import (
	"cmp"
	"slices"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/worker"
)

// held is a claim a worker received: what it sends its outcomes with.
type held struct {
	event string
	gen   int64
	id    string
}

// claim runs an autocommit claim and returns the rows it took.
func (h *history) claim(a *actor) ([]held, bool) {
	out, resp, ok := h.do(a, model.Op{Kind: model.ClaimOp, Worker: a.name}, worker.Request{Op: "claim"})
	if !ok || out.Kind != model.Claimed {
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

func sortedRows(rows []worker.ClaimRow) []worker.ClaimRow {
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b worker.ClaimRow) int { return cmp.Compare(eventIndex(a.Event), eventIndex(b.Event)) })
	return rows
}

// eventIndex is an event's enqueue position (worker.EventNumber); an
// event the run never enqueued goes last.
func eventIndex(e string) int {
	if n := worker.EventNumber(e); n > 0 {
		return n
	}
	return 1 << 30
}
