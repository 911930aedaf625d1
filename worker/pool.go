package worker

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
)

// Pool is a harness's worker processes by name, kept across checks so that
// a check costs the SQL it runs, not process start-up, with a connected
// spare per name so that a respawn costs a pipe message. Each name's spec
// (its connection string: its own fault proxy, or the server) comes from
// specFor. A Pool is used by one goroutine at a time.
type Pool struct {
	specFor func(name string) Spec
	procs   map[string]*Process
	spares  spares
	// stale are processes whose connection a server restart broke while
	// they were paused or unused: they reconnect before their next use.
	stale map[string]bool
}

// NewPool returns an empty pool.
func NewPool(specFor func(name string) Spec) *Pool {
	return &Pool{specFor: specFor, procs: map[string]*Process{}, stale: map[string]bool{}}
}

// Get is name's process, nil when it has none (never spawned, or killed).
func (p *Pool) Get(name string) *Process { return p.procs[name] }

// Paused reports whether name's process is stopped by a pause (SIGSTOP);
// false when it has none.
func (p *Pool) Paused(name string) bool {
	proc := p.procs[name]
	return proc != nil && proc.Paused()
}

// Spawn gives name a live process: a spare when one is ready.
func (p *Pool) Spawn(name string) error {
	spec := p.specFor(name)
	defer p.spares.refill(spec)
	if proc := p.spares.take(name); proc != nil {
		p.procs[name] = proc
		return nil
	}
	proc, err := Spawn(spec)
	if err != nil {
		return err
	}
	p.procs[name] = proc
	return nil
}

// Kill SIGKILLs name's process and waits, through conn, until the server
// has ended its backend, so that its open transaction's locks are gone
// when Kill returns. The server is told to end the backend at once:
// otherwise it ends it only when the kernel has torn the process down and
// closed its socket (a few milliseconds), or behind a proxy, not at all.
func (p *Pool) Kill(ctx context.Context, conn *pgx.Conn, name string) error {
	proc := p.procs[name]
	if proc == nil {
		return nil
	}
	backend := proc.ServerBackend().Exited()
	p.KillIdle(name)
	backend.Terminate(ctx, conn)
	return backend.AwaitGone(ctx, conn)
}

// KillIdle SIGKILLs name's process and does not wait for the server to end
// its backend: for a process that holds no lock and runs no statement,
// about 3 ms a kill, paid hundreds of times while shrinking.
func (p *Pool) KillIdle(name string) {
	if proc := p.procs[name]; proc != nil {
		proc.KillAsync()
	}
	delete(p.procs, name)
	delete(p.stale, name)
}

// Prepare makes every named process live and running with no open
// transaction, whatever the previous check (passed or failed) left. Every
// process of the pool is reset, named or not: one left paused with an open
// transaction would hold row locks the next reset must take. A process
// that does not answer its reset is killed (kill) and replaced.
func (p *Pool) Prepare(names []string, kill func(name string)) error {
	reqs := map[string]Request{}
	for name, proc := range p.procs {
		if proc.Paused() {
			proc.Resume()
		}
		req := Request{Op: "reset"}
		if p.stale[name] {
			req.Op = "reconnect"
			delete(p.stale, name)
		}
		reqs[name] = req
	}
	for name, err := range p.doAll(reqs) {
		if err != nil {
			kill(name)
		}
	}
	for _, name := range names {
		if p.procs[name] == nil {
			if err := p.Spawn(name); err != nil {
				return err
			}
		}
	}
	return nil
}

// doAll sends each named process its request, all at once, and waits for
// every answer: the pool's resets cost one round trip, not one a process.
func (p *Pool) doAll(reqs map[string]Request) map[string]error {
	errs := make(map[string]error, len(reqs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, req := range reqs {
		proc := p.procs[name]
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := proc.Do(req)
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	return errs
}

// MarkStale records that a server restart broke name's connection while
// it could not notice (paused, or not in use): it reconnects first.
func (p *Pool) MarkStale(name string) {
	p.stale[name] = true
	if proc := p.procs[name]; proc != nil {
		proc.Backend = 0 // gone with the crash; its pid may be reused
	}
}

// Apps maps the application_name of each live process of the pool to its
// worker's name: the sessions whose locks are the check's (BlockedBy).
func (p *Pool) Apps() map[string]string {
	apps := make(map[string]string, len(p.procs))
	for name, proc := range p.procs {
		apps[proc.AppName()] = name
	}
	return apps
}

// Stale reports whether name's connection is known broken by a restart.
func (p *Pool) Stale(name string) bool { return p.stale[name] }

// Used records that name sent a statement: it answered, or it dropped its
// broken connection; either way it is no longer stale.
func (p *Pool) Used(name string) { delete(p.stale, name) }

// Names are the pool's processes.
func (p *Pool) Names() []string {
	out := make([]string, 0, len(p.procs))
	for name := range p.procs {
		out = append(out, name)
	}
	return out
}

// DiscardSpares kills every spare: after a server restart, which breaks
// their connections.
func (p *Pool) DiscardSpares() { p.spares.discard() }

// Close kills every process and spare.
func (p *Pool) Close() {
	p.spares.discard()
	for name, proc := range p.procs {
		proc.Kill()
		delete(p.procs, name)
	}
}
