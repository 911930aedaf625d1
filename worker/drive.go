package worker

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
)

// OpDrive asks a worker to drive its part of a concurrent history by
// itself: it draws its operations, runs them and records each on the
// board (board.go) until the history's budget or time is spent, then
// answers (asking the parent on the way only to end a backend a fault
// cut). The parent-driven way, a request and an answer over the
// pipe per operation, woke two more processes per operation than a plain
// client does; on two cores that halved the rate (issue 12's bench). A
// worker executable, which serves no drive, is still driven that way, with
// the same draws (DriveOps).
const OpDrive = "drive"

// OpEnded is the parent's answer to a worker's EndBackend question.
const OpEnded = "ended"

// DriveRequest is a drive's draws and workload.
type DriveRequest struct {
	Seed   uint64        `json:"seed"`
	Stream uint64        `json:"stream"`
	Hold   time.Duration `json:"hold"`  // the longest an open claim transaction is held
	Renew  bool          `json:"renew"` // the protocol has a renew section
	// NoTx leaves out claims in an open transaction: a worker executable
	// without the tx feature (the parent drives it: DriveOps).
	NoTx bool `json:"no_tx,omitempty"`
}

// DriveReply is a drive's answer, or a question on the way: EndBackend
// asks the parent to end a backend a fault cut (with its supervisor
// connection, which no fault touches) before the worker writes the
// outcome as unknown, and to answer OpEnded. Rule and Detail are a
// failure that stopped the history.
type DriveReply struct {
	EndBackend uint32 `json:"end_backend,omitempty"`
	Epoch      int64  `json:"epoch,omitempty"`
	Rule       string `json:"rule,omitempty"`
	Detail     string `json:"detail,omitempty"`
}

// DriveOps runs a drive's operations, each as one operation of the
// history: the worker process's own connection (drive_op.go), or, for a
// worker executable, which serves no drive of its own, the parent sending
// it one request at a time (concurrent's parent driver). Do returns the
// answer, its outcome and a claim's rows in enqueue order; ok is false
// when the worker's part of the history is over (a failure, which Do has
// recorded, or no connection until the history's end).
type DriveOps interface {
	Do(op model.Op, req Request) (resp Response, out model.OutcomeKind, grants []Grant, ok bool)
}

// Drawer is what a drive draws with: the history's board (budget, hints,
// claim counts), the worker's slot and name, and the drive's seed.
type Drawer struct {
	Board  *Board
	Slot   int // the worker's slot: the hints it posts are its own
	Name   string
	HasGen bool // the protocol's claims carry a generation
	Req    DriveRequest
}

// Draw runs the worker's part of a history on ops: claims in autocommit
// and in open transactions (held a moment, then committed or rolled back),
// completes, retries and renews of its claims, the stale ones included. It
// aims at the race a sequential run cannot show: when another worker holds
// a reclaim open, a worker that still holds an older claim of that row
// sends its stale outcome at once, so that it waits behind the reclaim's
// lock. bench's raw loop draws the same way (concurrent_raw_actors.go).
func (w Drawer) Draw(ops DriveOps) {
	d := &draws{Drawer: w, ops: ops, rng: rand.New(rand.NewPCG(w.Req.Seed, w.Req.Stream))}
	d.run()
}

// draws is one drive's draw in progress.
type draws struct {
	Drawer
	ops DriveOps
	rng *rand.Rand
}

// held is a claim the worker received: what it sends its outcomes with.
type held struct {
	event int
	gen   int64
	id    string
}

func (d *draws) run() {
	var claims []held
	for d.Board.Take() {
		if e, gen, ok := d.Board.Hint(); ok {
			if c, found := olderClaim(claims, e, gen); found && d.rng.IntN(5) > 0 {
				if !d.staleOutcome(c) {
					return
				}
				continue
			}
		}
		n := d.rng.IntN(100)
		switch {
		case n < 30 || n >= 50 && len(claims) == 0 || n < 50 && d.Req.NoTx:
			got, ok := d.claim()
			if !ok {
				return
			}
			claims = keep(claims, got)
		case n < 50:
			got, ok := d.claimInTx()
			if !ok {
				return
			}
			claims = keep(claims, got)
		default:
			c := claims[len(claims)-1]
			if d.rng.IntN(2) == 0 {
				c = claims[d.rng.IntN(len(claims))]
			}
			if !d.outcome(c) {
				return
			}
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

func olderClaim(claims []held, event int, gen int64) (held, bool) {
	for i := len(claims) - 1; i >= 0; i-- {
		if c := claims[i]; c.event == event && c.gen < gen {
			return c, true
		}
	}
	return held{}, false
}

// claim runs an autocommit claim and returns the rows it took.
func (d *draws) claim() ([]held, bool) {
	resp, _, grants, ok := d.ops.Do(model.Op{Kind: model.ClaimOp, Worker: d.Name}, Request{Op: "claim"})
	if !ok || len(grants) == 0 {
		return nil, ok
	}
	return d.acknowledge(resp.Rows, grants), true
}

// claimInTx claims inside a transaction, holds it open a moment (posting
// a hint for each row it reclaimed), then commits or, once in seven,
// rolls back.
func (d *draws) claimInTx() ([]held, bool) {
	resp, out, grants, ok := d.ops.Do(model.Op{Kind: model.Begin, Worker: d.Name}, Request{Op: "begin"})
	if !ok || out == model.Unknown {
		return nil, ok
	}
	for _, g := range grants {
		switch {
		case !d.HasGen:
			d.Board.PostHint(g.Event, math.MaxInt64, d.Slot) // any older claim is stale
		case g.Gen > 1:
			d.Board.PostHint(g.Event, g.Gen, d.Slot)
		}
	}
	if d.Req.Hold > 0 {
		time.Sleep(time.Duration(d.rng.Int64N(int64(d.Req.Hold))))
	}
	kind, op := model.Commit, "commit"
	if d.rng.IntN(7) == 0 {
		kind, op = model.Rollback, "rollback"
	}
	_, end, _, ok := d.ops.Do(model.Op{Kind: kind, Worker: d.Name}, Request{Op: op})
	for _, g := range grants {
		d.Board.ClearHint(g.Event)
	}
	if !ok || kind == model.Rollback || end != model.OK {
		return nil, ok
	}
	return d.acknowledge(resp.Rows, grants), true
}

// acknowledge turns a claim's rows into held claims. A protocol without a
// generation is sent the suite's own count of claims on the row; should
// that count be off (a claim whose reply was lost), the protocol and the
// model both compare it with the true count and both refuse.
func (d *draws) acknowledge(rows []ClaimRow, grants []Grant) []held {
	ids := map[int]string{}
	for _, r := range rows {
		ids[EventNumber(r.Event)] = r.ID
	}
	var out []held
	for _, g := range grants {
		gen := g.Gen
		if !d.HasGen {
			gen = d.Board.CountClaim(g.Event)
		}
		out = append(out, held{event: g.Event, gen: gen, id: ids[g.Event]})
	}
	return out
}

// staleOutcome sends a complete, a retry or a renew for c, each as often:
// the outcome aimed at a reclaim's open transaction.
func (d *draws) staleOutcome(c held) bool {
	kinds := []model.Kind{model.Complete, model.Retry}
	if d.Req.Renew {
		kinds = append(kinds, model.Renew)
	}
	return d.send(c, kinds[d.rng.IntN(len(kinds))])
}

// outcome sends a complete (most often), a retry or a renew for c.
func (d *draws) outcome(c held) bool {
	kind := model.Complete
	switch n := d.rng.IntN(20); {
	case n < 5:
		kind = model.Retry
	case n < 9 && d.Req.Renew:
		kind = model.Renew
	}
	return d.send(c, kind)
}

// send runs the outcome kind (complete, retry or renew) of claim c.
func (d *draws) send(c held, kind model.Kind) bool {
	section := map[model.Kind]string{model.Complete: sut.Complete, model.Retry: sut.Retry, model.Renew: sut.Renew}[kind]
	op := model.Op{Kind: kind, Worker: d.Name, Event: EventName(c.event), Gen: c.gen}
	_, _, _, ok := d.ops.Do(op, Request{Op: section, ID: c.id, Gen: c.gen})
	return ok
}
