package outboxlabtest

import (
	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/search"
)

// An Option changes one thing about a Check or Run.
type Option func(*options)

type options struct {
	cfg      machine.Config
	checks   int
	steps    int
	seed     uint64
	shard    search.Shard
	profile  bool
	topology pgserver.Topology
	worker   string
	protocol string // Replay's protocol, when the option replaces the file's
}

func newOptions(opts []Option) options {
	o := options{cfg: machine.Default(), topology: pgserver.Single}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Budget is the number of checks (random programs) and the average steps
// per check; 0 keeps rapid's (100 checks of 30 steps). rapid's flags and
// RAPID_CHECKS / RAPID_STEPS win over it, so a nightly job can raise the
// budget without a change of code.
func Budget(checks, steps int) Option {
	return func(o *options) { o.checks, o.steps = checks, steps }
}

// Faults turns the network faults and server restarts on (the default) or
// off. Without them a run is faster, and misses what only a fault shows.
func Faults(on bool) Option { return func(o *options) { o.cfg.Faults = on } }

// Workers is the most worker processes one check runs (2 or more; the
// default is 4).
func Workers(n int) Option {
	return func(o *options) {
		o.cfg.MaxWorkers = n
		o.cfg.MinWorkers = min(o.cfg.MinWorkers, n)
	}
}

// Profile asks for a verdict per property (outboxlab check --profile): a
// broken property fails the test with its own counterexample, found with
// the properties broken before it relaxed, so one failure hides no other.
func Profile() Option { return func(o *options) { o.profile = true } }

// Seed is the seed of the first check when -rapid.seed and RAPID_SEED are
// not set (0: a random one, printed on failure).
func Seed(seed uint64) Option { return func(o *options) { o.seed = seed } }

// Shard runs part k of n of the budget: the checks of one contiguous range
// of the seeds of the whole run (search.Shard), so n CI jobs with the same
// seed share one budget. OUTBOXLAB_SHARD=k/n wins over it. A shard needs a
// seed set (Seed, -rapid.seed or RAPID_SEED): shards of one run must start
// from the same one.
func Shard(k, n int) Option { return func(o *options) { o.shard = search.Shard{K: k, N: n} } }

// Topology runs the check on that deployment (outboxlab check --topology):
// pgserver.Single (the default), AsyncCommit, AsyncStandby, SyncStandby,
// PoolerTransaction or PoolerSession, or their names ("async-standby").
// Every topology but single is built from local server binaries (the
// pooler ones with Debian's pgbouncer), one per test binary, shared by its
// checks; an unknown name is bad input. The result names the topology, and so does
// the failure's outboxlab reproduce line.
func Topology(t pgserver.Topology) Option { return func(o *options) { o.topology = t } }

// Worker makes the protocol a worker executable's (outboxlab check
// --worker): command is run through /bin/sh once per simulated worker and
// speaks the worker protocol on its stdin and stdout
// (docs/worker-protocol.md); the protocol file holds the directives and
// the harness's sections only. Check and Run take it; CheckDriver does not.
func Worker(command string) Option { return func(o *options) { o.worker = command } }

// Protocol makes Replay run the program against this protocol file (or
// built-in name) instead of the one the file names: the counterexample of
// a broken version, replayed against the fixed one. Check and Run take
// their protocol as an argument and ignore it.
func Protocol(path string) Option { return func(o *options) { o.protocol = path } }
