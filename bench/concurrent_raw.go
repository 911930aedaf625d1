package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/concurrent"
	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/sut"
)

// rawLoop runs the driver's mix of statements without the driver: per
// history, the table reset to cfg.Events events, then cfg.Workers
// connections (one goroutine each) and a fixture connection spend cfg.Ops
// operations with the draws of a driving worker (worker/drive.go) and of
// the fixture actor (concurrent/fixtures.go): claims in autocommit and in a transaction committed or,
// once in seven, rolled back, outcomes of a worker's own claims and stale
// ones while another holds a reclaim open, and the fixture actor's expire,
// due and age aimed by its last read, enqueues up to cfg.MaxEvents and
// reads, with its pauses.
type rawLoop struct {
	inst  *sut.Instance
	cfg   concurrent.Config
	conns []*pgx.Conn
	next  int           // the next history's index (its draws' seed)
	busy  time.Duration // the concurrent parts' time, resets left out
	mix   concurrent.Mix
	phase func(start bool) // as concurrent.Config.Phase (nil: none)
}

func newRawLoop(inst *sut.Instance, cfg concurrent.Config) (*rawLoop, error) {
	l := &rawLoop{inst: inst, cfg: cfg, mix: concurrent.Mix{}}
	for range cfg.Workers + 1 {
		c, err := sut.Connect(context.Background(), inst.ConnString, inst.Statements.Schema)
		if err != nil {
			l.close()
			return nil, err
		}
		l.conns = append(l.conns, c)
	}
	return l, nil
}

func (l *rawLoop) close() {
	for _, c := range l.conns {
		closeConn(c)
	}
}

// rate is the operations per second of the histories run so far.
func (l *rawLoop) rate() float64 { return float64(mixTotal(l.mix)) / l.busy.Seconds() }

// run runs n more histories.
func (l *rawLoop) run(n int) error {
	ctx := context.Background()
	cfg := l.cfg
	for range n {
		h := l.next
		l.next++
		r := &rawHistory{inst: l.inst, cfg: cfg}
		for i := range cfg.Events {
			r.events = append(r.events, fmt.Sprintf("e%d", i+1))
		}
		if err := l.inst.Reset(ctx, r.events); err != nil {
			return err
		}
		r.left.Store(int64(cfg.Ops))
		if l.phase != nil {
			l.phase(true)
		}
		start := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, cfg.Workers+1)
		mixes := make([]concurrent.Mix, cfg.Workers+1)
		for w := range cfg.Workers + 1 {
			mixes[w] = concurrent.Mix{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if w == cfg.Workers {
					errs[w] = r.fixtures(l.conns[w], rand.New(rand.NewPCG(uint64(h), 99)), mixes[w])
					return
				}
				errs[w] = r.worker(l.conns[w], fmt.Sprintf("w%d", w+1), rand.New(rand.NewPCG(uint64(h), uint64(w))), mixes[w])
			}()
		}
		wg.Wait()
		l.busy += time.Since(start)
		if l.phase != nil {
			l.phase(false)
		}
		for w, err := range errs {
			if err != nil {
				return err
			}
			l.mix.Merge(mixes[w])
		}
	}
	return nil
}

// rawHistory is one raw history: the budget, and what the actors share
// (the hints of reclaims held open, the fixture actor's view of the rows).
type rawHistory struct {
	inst   *sut.Instance
	cfg    concurrent.Config
	left   atomic.Int64
	mu     sync.Mutex
	hints  []rawClaim // reclaims in an open transaction
	events []string   // the fixture actor's only
	last   []sut.StateRow
}

type rawClaim struct {
	event, id string
	gen       int64
}

func (r *rawHistory) take() bool { return r.left.Add(-1) >= 0 }

func (r *rawHistory) hint() (rawClaim, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.hints) == 0 {
		return rawClaim{}, false
	}
	return r.hints[len(r.hints)-1], true
}

func (r *rawHistory) setHints(add, remove []rawClaim) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hints = append(r.hints, add...)
	r.hints = slices.DeleteFunc(r.hints, func(h rawClaim) bool {
		return slices.ContainsFunc(remove, func(x rawClaim) bool { return x.event == h.event })
	})
}

func claimKey(kind model.Kind, rows []sut.ClaimResult) string {
	if len(rows) == 0 {
		return concurrent.MixKey(kind, model.Empty)
	}
	return concurrent.MixKey(kind, model.Claimed)
}

func asClaims(rows []sut.ClaimResult) []rawClaim {
	var out []rawClaim
	for _, row := range rows {
		out = append(out, rawClaim{row.Event, row.ID, row.Gen})
	}
	return out
}
