package concurrent

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/worker"
)

// Result is a concurrent run's verdict.
type Result struct {
	Histories int // histories run and checked
	Ops       int // operations recorded, drains included
	// Undecided counts histories porcupine could not decide in
	// CheckTimeout: neither a pass nor a failure.
	Undecided int
	Faults    map[string]int
	Failure   *Failure
	DriveTime time.Duration // running the histories
	CheckTime time.Duration // checking them (linearizability and shrinking)
	// ConcurrentOps and ConcurrentTime are the operations and the time of
	// the histories' concurrent parts: resets and drains left out.
	ConcurrentOps  int
	ConcurrentTime time.Duration
	// ConcurrentMix is the concurrent parts' statements by kind and outcome.
	ConcurrentMix Mix
}

// Failure is a history that broke the policy: not linearizable against
// the model, or a statement that failed in a way the format forbids.
type Failure struct {
	Rule    string // "not linearizable", or the driver's rule
	Detail  string
	History int      // which history of the run (from 1)
	Ops     []string // the shrunk failing part, one operation a line
	Full    int      // operations in the whole history
	HTML    string   // porcupine's visualisation of the shrunk part
	// Broken is the rule of the model the shrunk part breaks, as the
	// state machine names it (rescue took e1 whose lease is live), when
	// one operation breaking it explains the part (blame.go); "" when
	// none does.
	Broken string
	// Witness is the failing prefix the shrunk part was searched from,
	// sound by construction (see shrink), and WitnessHTML its picture.
	Witness     []string
	WitnessHTML string
}

// Run runs histories until the budget is spent or one fails.
func (r *Runner) Run() Result { return r.RunMore(r.cfg.Histories, r.cfg.Duration) }

// RunMore runs up to n more histories of the run, within d, numbered and
// drawn after those run before: `outboxlab bench` alternates a few of the
// driver's histories with a few of the raw loop's, so that both see the
// same machine.
func (r *Runner) RunMore(n int, d time.Duration) Result {
	res := Result{Faults: map[string]int{}, ConcurrentMix: Mix{}}
	start := time.Now()
	if r.rng == nil {
		r.rng = rand.New(rand.NewPCG(r.cfg.Seed, 0x6f7574626f78))
	}
	rng := r.rng
	for k := 0; k < n && time.Since(start) < d; k++ {
		i := r.next
		r.next++
		t0 := time.Now()
		h, fired, err := r.runHistory(i, rng)
		res.DriveTime += time.Since(t0)
		for k, n := range fired {
			res.Faults[k] += n
		}
		if err != nil {
			res.Failure = &Failure{Rule: "harness error", Detail: err.Error(), History: i + 1}
			return res
		}
		ops := h.rec.history(r.policy().MaxAttempts > 0)
		res.Histories++
		res.Ops += len(ops)
		res.ConcurrentOps += h.concurrentOps
		res.ConcurrentTime += h.concurrentTime
		res.ConcurrentMix.Merge(h.concurrentMix)
		if h.failure != nil {
			f := *h.failure
			f.History, f.Full = i+1, len(ops)
			f.Ops = lines(ops)
			f.HTML = r.writeHTML(h.initial, h, ops, fmt.Sprint(i+1))
			res.Failure = &f
			return res
		}
		if r.cfg.NoCheck {
			continue
		}
		t1 := time.Now()
		f, undecided := r.check(h, ops)
		res.CheckTime += time.Since(t1)
		if undecided {
			res.Undecided++
		}
		if f != nil {
			f.History = i + 1
			res.Failure = f
			return res
		}
	}
	return res
}

// runHistory resets the table and the workers, runs one history with
// every actor at once, then the drain.
func (r *Runner) runHistory(i int, rng *rand.Rand) (*history, map[string]int, error) {
	if err := r.resetActors(); err != nil {
		return nil, nil, err
	}
	h := &history{r: r, index: i, ids: map[string]string{}, board: r.board, epoch: r.board.Epoch()}
	for k := range r.cfg.Events {
		h.events = append(h.events, fmt.Sprintf("e%d", k+1))
	}
	h.initial = slices.Clone(h.events)
	if err := r.reset(h); err != nil {
		return nil, nil, err
	}
	if r.cfg.Phase != nil {
		r.cfg.Phase(true)
	}
	h.rec = newRecorder()
	h.fixtures = &fixtures{h: h, conn: r.fixtureConn}
	defer func() { r.fixtureConn = h.fixtures.conn }() // kept for the next history
	r.board.Start(r.cfg.Ops, worker.MonoNow()+int64(r.historyTime()))
	var wg sync.WaitGroup
	for k, a := range r.workers {
		wg.Add(1)
		a.collected = 0
		seed := rng.Uint64()
		go func() { defer wg.Done(); h.drive(a, uint64(k), rand.New(rand.NewPCG(seed, uint64(k)))) }()
	}
	wg.Add(1)
	fseed := rng.Uint64()
	go func() { defer wg.Done(); h.fixtures.play(rand.New(rand.NewPCG(fseed, 99))) }()
	fired := map[string]int{}
	stop := make(chan struct{})
	var faultsDone sync.WaitGroup
	if r.in != nil {
		faultsDone.Add(1)
		qseed := rng.Uint64()
		restart := r.in.CanRestart() && (i%4 == 0 || r.restartDue)
		go func() {
			defer faultsDone.Done()
			fired = h.faultLoop(stop, rand.New(rand.NewPCG(qseed, 7)), restart)
		}()
	}
	wg.Wait()
	if h.board.Stopped() && h.failure == nil {
		// Only a failure stops a history, and every failure is recorded.
		h.fail("harness error", "the history was stopped with no failure recorded")
	}
	h.concurrentTime = time.Duration(h.rec.now())
	if r.cfg.Phase != nil {
		r.cfg.Phase(false)
	}
	part := h.rec.history(false)
	h.concurrentOps = len(part)
	h.concurrentMix = Mix{}
	h.concurrentMix.Add(part)
	close(stop)
	faultsDone.Wait()
	if h.failure == nil {
		h.drain()
	}
	return h, fired, nil
}

// resetActors readies every process for the next history, all at once: a
// fresh connection each when faults may have broken one unnoticed, else
// only the rollback of anything left open.
func (r *Runner) resetActors() error {
	op := "reset"
	if r.in != nil {
		op = "reconnect"
	}
	errs := make(chan error, len(r.actors()))
	for _, a := range r.actors() {
		go func() { errs <- a.reset(op) }()
	}
	var first error
	for range r.actors() {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// historyTime bounds a history's wall time well inside the declared lease:
// the model's leases end only through the fixtures, never by the clock
// (a lease aged once keeps 40% of it).
func (r *Runner) historyTime() time.Duration {
	return min(5*time.Second, time.Duration(0.25*float64(r.inst.Proto.Lease)))
}

// reset empties the tables, enqueues the history's events and reads the
// rows' ids for the fixtures.
func (r *Runner) reset(h *history) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.inst.EnsureConn(ctx); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	if err := r.inst.Reset(ctx, h.events); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	rows, err := r.inst.Driver().ReadState(ctx, r.inst.Conn)
	if err != nil {
		return fmt.Errorf("reset: read state: %w", err)
	}
	for _, row := range rows {
		h.ids[row.Event] = row.ID
	}
	return nil
}

// drain ends a history as the state machine's checks end, one step at a
// time with no fault: every lease expired, every row due, a rescue, then
// claim and complete on one worker until nothing is claimable, and a last
// read. Each step is an operation of the history, checked with the rest:
// a row stranded by the history shows as a claim that found nothing.
func (h *history) drain() {
	f := h.fixtures
	f.observe()
	for _, e := range h.events {
		f.fixture(model.Expire, e)
		f.fixture(model.MakeDue, e)
	}
	if h.r.rescuer != nil {
		f.rescue()
	}
	w := h.r.workers[0]
	for range 3*len(h.events) + 2 {
		got, ok := h.claim(w)
		if !ok || len(got) == 0 {
			break
		}
		for _, c := range got {
			op := model.Op{Kind: model.Complete, Worker: w.name, Event: c.event, Gen: c.gen}
			if _, _, ok := h.do(w, op, worker.Request{Op: "complete", ID: c.id, Gen: c.gen}); !ok {
				return
			}
		}
	}
	f.observe()
}

// check runs porcupine on one history; a failure comes shrunk, with its
// HTML written.
func (r *Runner) check(h *history, ops []porcupine.Operation) (f *Failure, undecided bool) {
	m := Model(r.policy(), h.initial, r.inst.Statements.HasGen)
	res, _ := porcupine.CheckOperationsVerbose(m, ops, r.cfg.CheckTimeout)
	switch res {
	case porcupine.Ok:
		return nil, false
	case porcupine.Unknown:
		return nil, true
	}
	mk := func(events []string) porcupine.Model { return Model(r.policy(), events, r.inst.Statements.HasGen) }
	witness, events, small := shrink(mk, h.initial, ops, r.cfg.CheckTimeout)
	b, named := blame(r.policy(), events, r.inst.Statements.HasGen, small, min(r.cfg.CheckTimeout, 10*time.Second))
	return &Failure{Rule: "not linearizable", Broken: b.Rule, Detail: failureDetail(events, len(small), b, named),
		Ops: lines(small), Full: len(ops), HTML: r.writeHTML(events, h, small, fmt.Sprint(h.index+1)),
		Witness: lines(witness), WitnessHTML: r.writeHTML(h.initial, h, witness, fmt.Sprintf("%d-witness", h.index+1))}, false
}

// failureDetail says what the shrunk part shows: the rule it breaks, when
// one operation breaking one rule explains it, then why it fails at all.
func failureDetail(events []string, n int, b breach, named bool) string {
	why := fmt.Sprintf("%s; no order of the %d operations below, each taking effect between its call and its return, is allowed by the model", enqueued(events), n)
	if !named {
		return why + ", and without the one that returned last the rest is linearizable"
	}
	return b.Detail + "; " + why + ", and one is if that step broke that rule"
}

func enqueued(events []string) string {
	if len(events) == 0 {
		return "no event at the start"
	}
	return "events " + strings.Join(events, " ") + " at the start"
}
