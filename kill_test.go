package outboxlab

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/faults"
	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/scenarios"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
)

// TestKillAfterCommittedClaim is the article's process-kill test, for real:
// a child process claims in autocommit and reports the claim; only then is
// it sent SIGKILL. The exit must be by SIGKILL, the row INPROGRESS at
// generation 1, and after the lease fixture the reclaim returns
// [1, "event-001", 2].
func TestKillAfterCommittedClaim(t *testing.T) {
	inst := install(t, "leased")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := inst.Reset(ctx, scenarios.Events); err != nil {
		t.Fatal(err)
	}
	k, err := scenarios.KillClaimer(ctx, &scenarios.Env{Inst: inst, St: inst.Statements})
	if err != nil {
		t.Fatal(err)
	}
	if got := [3]any{k.First.ID, k.First.Event, k.First.Gen}; got != [3]any{"1", "event-001", int64(1)} {
		t.Errorf("child's claim %v, want [1 event-001 1]", got)
	}
	if !worker.KilledBySIGKILL(k.Exit) {
		t.Errorf("child exit %v, want death by SIGKILL", k.Exit)
	}
	if k.Persisted.Status != model.InProgress || k.Persisted.Gen != 1 || !k.Persisted.LeaseHeld {
		t.Errorf("persisted after kill: %+v, want INPROGRESS at generation 1 with a lease", k.Persisted)
	}
	if got := [3]any{k.Reclaim.ID, k.Reclaim.Event, k.Reclaim.Gen}; got != [3]any{"1", "event-001", int64(2)} {
		t.Errorf("reclaim after expiry %v, want [1 event-001 2]", got)
	}
}

// TestKillStrandsBaselineRow shows the article's first failure with a real
// kill: the baseline's claim never selects the abandoned row again.
func TestKillStrandsBaselineRow(t *testing.T) {
	inst := install(t, "baseline")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := inst.Reset(ctx, []string{"event-001"}); err != nil {
		t.Fatal(err)
	}
	k, err := scenarios.KillClaimer(ctx, &scenarios.Env{Inst: inst, St: inst.Statements})
	if err != nil {
		t.Fatal(err)
	}
	if !worker.KilledBySIGKILL(k.Exit) || k.Persisted.Status != model.InProgress {
		t.Fatalf("kill did not leave a committed claim: exit %v, row %+v", k.Exit, k.Persisted)
	}
	if k.Reclaim.Found {
		t.Fatalf("baseline reclaimed %+v; the article's baseline strands the row", k.Reclaim)
	}
}

// TestConcurrentFaultStorm: real worker processes claim, complete and retry
// against leased as fast as they can, each through its own proxy, while a
// fault loop SIGKILLs them (they respawn), pauses them (SIGSTOP, SIGCONT),
// loses their requests and replies, and restarts the server, and a janitor
// expires leases and makes retried rows due, so that reclaims race stale
// owners. It stops by itself: a time limit and an iteration limit. Then a
// drain on the harness's own connection must bring every event to SENT, and
// the rows' history (a trigger in the test's copy of the protocol, lost
// replies included) and what the workers were told must agree that:
//   - every claim raised its row's generation by exactly one;
//   - a complete or retry applied only to an INPROGRESS row with a live
//     lease, at its current generation, and nothing changed a SENT row;
//   - no generation was handed to two claims, none above the row's final
//     one, and every complete a worker saw applied was at that final one.
func TestConcurrentFaultStorm(t *testing.T) {
	const (
		workers  = 4
		limit    = 3 * time.Second
		maxIters = 20000 // claims per worker
	)
	inst := install(t, "testdata/storm/leased_history.sql")
	srv, err := pgserver.Shared()
	if err != nil {
		t.Fatal(err)
	}
	in, err := faults.New(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var log stormLog
	pool := newStormPool(inst, in, workers)
	defer pool.close()
	if err := pool.start(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var wg sync.WaitGroup
	for i, sw := range pool.workers {
		wg.Add(1)
		go func() { defer wg.Done(); sw.drive(ctx, uint64(i), maxIters, &log) }()
	}
	var fired map[string]int
	wg.Add(2)
	go func() { defer wg.Done(); janitor(ctx, inst, &log) }()
	go func() { defer wg.Done(); fired = faultLoop(ctx, pool, in) }()
	wg.Wait()
	pool.close()

	reconnect(t, inst)
	drainStorm(t, inst, &log)
	checkStorm(t, inst, &log)
	claims, completes := log.counts()
	t.Logf("%d events, %d claims and %d completes acknowledged, faults %v", log.enqueued, claims, completes, fired)
	for _, kind := range []string{"kill", "pause", "request_lost", "reply_lost", "db_restart"} {
		if fired[kind] == 0 && (kind != "db_restart" || srv.Owned()) {
			t.Errorf("the storm never injected %s", kind)
		}
	}
	if errs := log.serverErrors(); len(errs) > 0 {
		t.Errorf("statements failed with a server error, or returned what their section may not, during the storm: %v", errs)
	}
}

// stormLog is what the workers were told: every claim and every applied
// complete they saw. A lost reply leaves no trace here, only in the history.
type stormLog struct {
	mu        sync.Mutex
	claims    map[string][]int64 // event -> generations acknowledged
	completes map[string][]int64 // event -> generations whose complete applied
	errs      []string
	enqueued  int
}

func (l *stormLog) claimed(event string, gen int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.claims == nil {
		l.claims = map[string][]int64{}
	}
	l.claims[event] = append(l.claims[event], gen)
}

func (l *stormLog) completed(event string, gen int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.completes == nil {
		l.completes = map[string][]int64{}
	}
	l.completes[event] = append(l.completes[event], gen)
}

func (l *stormLog) serverError(op, err string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) < 5 {
		l.errs = append(l.errs, op+": "+err)
	}
}

func (l *stormLog) serverErrors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errs
}

// counts is how many claims and applied completes the workers saw.
func (l *stormLog) counts() (claims, completes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return total(l.claims), total(l.completes)
}

func total(m map[string][]int64) int {
	n := 0
	for _, gens := range m {
		n += len(gens)
	}
	return n
}

// stormPool is the storm's worker processes, each behind its own proxy.
type stormPool struct {
	workers []*stormWorker
}

type stormWorker struct {
	spec worker.Spec
	mu   sync.Mutex
	proc *worker.Process // replaced by the driver when it dies
}

func newStormPool(inst *sut.Instance, in *faults.Injector, n int) *stormPool {
	pool := &stormPool{}
	for i := range n {
		name := fmt.Sprintf("w%d", i+1)
		pool.workers = append(pool.workers, &stormWorker{spec: worker.Spec{
			Name: name, ConnString: in.WorkerConnString(name), Statements: inst.Statements, OpTimeout: 2 * time.Second,
		}})
	}
	return pool
}

func (pool *stormPool) start() error {
	for _, sw := range pool.workers {
		p, err := worker.Spawn(sw.spec)
		if err != nil {
			return err
		}
		sw.proc = p
	}
	return nil
}

func (pool *stormPool) close() {
	for _, sw := range pool.workers {
		sw.mu.Lock()
		if sw.proc != nil {
			sw.proc.Kill()
			sw.proc = nil
		}
		sw.mu.Unlock()
	}
}

// pid is the worker's current process, 0 while it has none.
func (sw *stormWorker) pid() int {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.proc == nil {
		return 0
	}
	return sw.proc.Pid()
}

// respawn replaces a dead or hung process, trying until ctx ends (a spawn
// fails while the server restarts).
func (sw *stormWorker) respawn(ctx context.Context) *worker.Process {
	sw.mu.Lock()
	if sw.proc != nil {
		sw.proc.Kill()
		sw.proc = nil
	}
	sw.mu.Unlock()
	for ctx.Err() == nil {
		p, err := worker.Spawn(sw.spec)
		if err == nil {
			sw.mu.Lock()
			sw.proc = p
			sw.mu.Unlock()
			return p
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// drive claims, then completes (three times in four) or retries, until ctx
// ends or maxIters claims were tried. A connection error or a timeout
// leaves the outcome unknown: the worker records nothing and goes on, as a
// production worker would. Any other error fails the test (see ok).
func (sw *stormWorker) drive(ctx context.Context, seed uint64, maxIters int, log *stormLog) {
	rng := rand.New(rand.NewPCG(seed, 1))
	sw.mu.Lock()
	p := sw.proc
	sw.mu.Unlock()
	for i := 0; i < maxIters && ctx.Err() == nil; i++ {
		if p == nil {
			if p = sw.respawn(ctx); p == nil {
				return
			}
		}
		claim, err := p.Do(worker.Request{Op: "claim"})
		if err != nil { // killed, or hung
			p = nil
			continue
		}
		if !sw.ok("claim", claim, log) {
			continue
		}
		if !claim.Found {
			time.Sleep(500 * time.Microsecond)
			continue
		}
		log.claimed(claim.Event, claim.Gen)
		op := sut.Complete
		if rng.IntN(4) == 0 {
			op = sut.Retry
		}
		resp, err := p.Do(worker.Request{Op: op, ID: claim.ID, Gen: claim.Gen})
		if err != nil {
			p = nil
			continue
		}
		if sw.ok(op, resp, log) && resp.Applied && op == sut.Complete {
			log.completed(claim.Event, claim.Gen)
		}
	}
}

func (sw *stormWorker) ok(op string, resp worker.Response, log *stormLog) bool {
	if resp.Err == "" {
		return true
	}
	// A server error, or a result the format forbids (two rows from a
	// claim, a NULL generation), is the protocol's failure; only a lost
	// connection or a timeout, which the faults cause, leaves the
	// outcome unknown.
	if resp.ServerErr || resp.Protocol {
		log.serverError(sw.spec.Name+" "+op, resp.Err)
	}
	return false
}

// faultLoop injects one fault every few milliseconds until ctx ends, in
// turn: a kill, a pause, a lost request, a lost reply, and every tenth
// round a server restart (when this run owns the server). Every fault is
// undone before the next. It returns how many of each it injected.
func faultLoop(ctx context.Context, pool *stormPool, in *faults.Injector) map[string]int {
	rng := rand.New(rand.NewPCG(7, 7))
	fired := map[string]int{}
	kinds := []string{"kill", "pause", "request_lost", "reply_lost"}
	for round := 0; ; round++ {
		select {
		case <-ctx.Done():
			return fired
		case <-time.After(time.Duration(10+rng.IntN(30)) * time.Millisecond):
		}
		kind := kinds[round%len(kinds)]
		if round%10 == 9 && in.CanRestart() {
			kind = "db_restart"
		}
		if inject(ctx, kind, pool.workers[rng.IntN(len(pool.workers))], in, rng) {
			fired[kind]++
		}
	}
}

func inject(ctx context.Context, kind string, sw *stormWorker, in *faults.Injector, rng *rand.Rand) bool {
	var undo func()
	var err error
	switch kind {
	case "kill", "pause":
		pid := sw.pid()
		if pid == 0 {
			return false
		}
		if kind == "kill" {
			_, err = faults.Kill{Pid: pid}.Inject(ctx)
			return err == nil
		}
		undo, err = faults.Pause{Pid: pid}.Inject(ctx)
	case "request_lost":
		undo, err = in.LoseRequest(sw.spec.Name)
	case "reply_lost":
		undo, err = in.LoseReply(sw.spec.Name)
	case "db_restart":
		rctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		return in.Restart(rctx) == nil
	}
	if err != nil {
		return false
	}
	defer undo()
	time.Sleep(time.Duration(2+rng.IntN(20)) * time.Millisecond)
	return true
}

// janitor plays the clock on its own connection to the server: it expires
// some live leases (their owners' completes now go stale, and the rows can
// be reclaimed under them), makes waiting rows due, and enqueues more
// events when few are left, until ctx ends. It reconnects after a restart.
func janitor(ctx context.Context, inst *sut.Instance, log *stormLog) {
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	next := 0
	for ctx.Err() == nil {
		if conn == nil {
			c, err := sut.Connect(ctx, inst.ConnString, inst.Statements.Schema)
			if err != nil {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			conn = c
		}
		n, err := janitorRound(ctx, conn, next)
		if err != nil {
			conn.Close(context.Background())
			conn = nil
			continue
		}
		next += n
		log.mu.Lock()
		log.enqueued = next
		log.mu.Unlock()
		time.Sleep(2 * time.Millisecond)
	}
}

const stormMaxEvents = 5000

func janitorRound(ctx context.Context, conn *pgx.Conn, enqueued int) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, `UPDATE outbox_lab SET lease_until = statement_timestamp() - interval '1 second'
		WHERE status = 'INPROGRESS' AND lease_until > statement_timestamp() AND random() < 0.1`); err != nil {
		return 0, err
	}
	if _, err := conn.Exec(ctx, `UPDATE outbox_lab SET next_attempt_at = statement_timestamp() - interval '1 second'
		WHERE status = 'READY' AND next_attempt_at > statement_timestamp() AND random() < 0.3`); err != nil {
		return 0, err
	}
	var open int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM outbox_lab WHERE status <> 'SENT'`).Scan(&open); err != nil {
		return 0, err
	}
	if open >= 40 || enqueued >= stormMaxEvents {
		return 0, nil
	}
	const batch = 100
	_, err := conn.Exec(ctx, `INSERT INTO outbox_lab (event_id)
		SELECT format('e%s', lpad(g::text, 5, '0')) FROM generate_series($1::int, $2::int) AS g`, enqueued+1, enqueued+batch)
	if err != nil {
		return 0, err
	}
	return batch, nil
}

// reconnect gives the instance a fresh checking connection: a restart
// broke the one it had.
func reconnect(t *testing.T, inst *sut.Instance) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := sut.Connect(ctx, inst.ConnString, inst.Statements.Schema)
	if err != nil {
		t.Fatal(err)
	}
	old := inst.Conn
	inst.Conn = conn
	closeCtx, cancelClose := context.WithTimeout(ctx, 0)
	defer cancelClose()
	old.Close(closeCtx)
}

// drainStorm expires every lease and makes every row due, then claims and
// completes on the harness's connection until nothing is claimable.
func drainStorm(t *testing.T, inst *sut.Instance, log *stormLog) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, st := inst.Conn, inst.Statements
	if _, err := conn.Exec(ctx, `UPDATE outbox_lab SET lease_until = statement_timestamp() - interval '1 second' WHERE status = 'INPROGRESS'`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE outbox_lab SET next_attempt_at = statement_timestamp() - interval '1 second' WHERE status = 'READY'`); err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= stormMaxEvents+100; i++ {
		c, err := st.Claim(ctx, conn, "drain")
		if err != nil {
			t.Fatalf("drain: claim: %v", err)
		}
		if !c.Found {
			return
		}
		log.claimed(c.Event, c.Gen)
		ok, err := st.Apply(ctx, conn, sut.Complete, sut.Args{ID: c.ID, Gen: c.Gen, Worker: "drain"})
		if err != nil {
			t.Fatalf("drain: complete: %v", err)
		}
		if !ok {
			t.Fatalf("drain: the complete of %s at generation %d, just claimed, was rejected", c.Event, c.Gen)
		}
		log.completed(c.Event, c.Gen)
	}
	t.Fatal("drain: still claiming after every event")
}

// historyRow is one committed change of a row.
type historyRow struct {
	Event             string
	OldStatus, Status string
	OldGen, Gen       int64
	LeaseWasLive      bool
}

// checkStorm holds the table, its history and the workers' log to the
// policy (see TestConcurrentFaultStorm).
func checkStorm(t *testing.T, inst *sut.Instance, log *stormLog) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := inst.Statements.ReadState(ctx, inst.Conn)
	if err != nil {
		t.Fatal(err)
	}
	final := map[string]int64{}
	for _, r := range rows {
		if r.Status != model.Sent {
			t.Errorf("after the drain %s is %s at generation %d: an event never reached SENT", r.Event, r.Status, r.Gen)
		}
		final[r.Event] = r.Gen
	}
	history, err := readHistory(ctx, inst.Conn)
	if err != nil {
		t.Fatal(err)
	}
	for event, changes := range history {
		if msg := checkHistory(changes, final[event]); msg != "" {
			t.Errorf("history of %s: %s", event, msg)
		}
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	for event, gens := range log.claims {
		slices.Sort(gens)
		for i, g := range gens {
			if i > 0 && gens[i-1] == g {
				t.Errorf("%s: generation %d was handed to two claims", event, g)
			}
			if g > final[event] {
				t.Errorf("%s: a claim was told generation %d, above the final %d", event, g, final[event])
			}
		}
	}
	for event, gens := range log.completes {
		if len(gens) > 1 {
			t.Errorf("%s: %d completes applied (generations %v): SENT is terminal", event, len(gens), gens)
		}
		for _, g := range gens {
			if g != final[event] {
				t.Errorf("%s: a complete applied at generation %d, but the row ended at generation %d: it was not current", event, g, final[event])
			}
		}
	}
	claims := 0
	for _, changes := range history {
		for _, c := range changes {
			if c.Gen != c.OldGen {
				claims++
			}
		}
	}
	t.Logf("%d claims committed, %d acknowledged: the rest lost their reply or were cut", claims, total(log.claims))
}

func readHistory(ctx context.Context, conn *pgx.Conn) (map[string][]historyRow, error) {
	rows, err := conn.Query(ctx, `SELECT event_id, old_status, new_status, old_generation, new_generation, lease_was_live
		FROM outbox_history ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[historyRow])
	if err != nil {
		return nil, err
	}
	out := map[string][]historyRow{}
	for _, h := range list {
		out[h.Event] = append(out[h.Event], h)
	}
	return out, nil
}

// checkHistory walks one row's committed changes in order and returns what
// broke the policy, or "".
func checkHistory(changes []historyRow, final int64) string {
	status, gen := string(model.Ready), int64(0)
	for i, c := range changes {
		step := fmt.Sprintf("change %d (%s gen %d -> %s gen %d)", i+1, c.OldStatus, c.OldGen, c.Status, c.Gen)
		switch {
		case c.OldStatus != status || c.OldGen != gen:
			return fmt.Sprintf("%s does not follow %s gen %d", step, status, gen)
		case c.OldStatus == string(model.Sent):
			return step + ": a SENT row changed"
		case c.Gen != c.OldGen && (c.Gen != c.OldGen+1 || c.Status != string(model.InProgress)):
			return step + ": a claim must raise the generation by exactly one"
		case c.Status == string(model.Sent) && c.OldStatus != string(model.InProgress):
			return step + ": only a claimed row may be completed"
		case c.Gen == c.OldGen && c.OldStatus == string(model.InProgress) && c.Status != c.OldStatus && !c.LeaseWasLive:
			return step + ": a complete or retry applied after the lease expired"
		}
		status, gen = c.Status, c.Gen
	}
	if gen != final {
		return fmt.Sprintf("ends at generation %d, the row at %d", gen, final)
	}
	return ""
}
