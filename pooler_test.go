package outboxlab

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/search"
)

// The pooler topologies (PROTOCOL-FORMAT.md, "Session leases, and
// connection poolers"): a stored-lease protocol keeps its verdict behind
// PgBouncer, in session mode and in transaction mode, where its workers'
// transactions share fewer server connections than there are workers. The
// whole catalogue was measured by hand (docs/topologies.md); CI runs a
// subset that covers what a pooler could change: an open claim
// transaction, a waiting step's lock probe, a split, a library's fixed
// file, and mutants caught by a blocked claim and a stale outcome.

// poolerCase is one protocol held to its verdict on both poolers.
type poolerCase struct {
	path string
	rule string // "" for a pass
}

var poolerCases = []poolerCase{
	{"leased", ""},
	{"testdata/correct/two_statement_complete.sql", ""},
	{"testdata/libraries/fixed/river.sql", ""},
	{"testdata/libraries/fixed/que.sql", ""}, // que's fix: a stored lease in place of the session's lock
	{"testdata/mutants/claim_no_lock.sql", "claim blocked"},
	{"testdata/mutants/complete_no_generation.sql", "stale owner's complete applied"},
}

// TestTransactionPoolIsSmallerThanTheWorkers: the transaction pooler
// shares fewer server connections than the most workers a check runs, or
// it would pool nothing.
func TestTransactionPoolIsSmallerThanTheWorkers(t *testing.T) {
	if pgserver.PoolSize >= machine.Default().MaxWorkers || pgserver.PoolSize < 1 {
		t.Fatalf("pgserver.PoolSize %d, want from 1 to %d (machine.Default().MaxWorkers - 1)", pgserver.PoolSize, machine.Default().MaxWorkers-1)
	}
}

// TestPoolerTopologiesKeepVerdicts runs each case on pooler-transaction
// and pooler-session from seed 1, at a fifth of the default budget, and
// checks that its workers' statements ran on server backends named for
// them: through the pooler, not around it.
func TestPoolerTopologiesKeepVerdicts(t *testing.T) {
	honestSearch(t)
	setRapidFlag(t, "rapid.seed", "1")
	setRapidFlag(t, "rapid.checks", "20")
	for _, topo := range []pgserver.Topology{pgserver.PoolerTransaction, pgserver.PoolerSession} {
		for _, pc := range poolerCases {
			name := strings.TrimSuffix(pc.path[strings.LastIndex(pc.path, "/")+1:], ".sql")
			t.Run(string(topo)+"/"+name, func(t *testing.T) {
				h := topologyHarness(t, topo, pc.path, machine.Default())
				c := search.Measure(t.Name(), h, h.Check)
				program := strings.Join(c.Program, "\n")
				switch {
				case pc.rule == "" && c.Caught:
					t.Fatalf("%s failed on %s: %v\n%s", name, topo, c.Failure, program)
				case pc.rule != "" && (c.Failure == nil || !strings.Contains(c.Failure.Rule, pc.rule)):
					t.Fatalf("%s on %s: caught %v (%v), want a failure %q\n%s", name, topo, c.Caught, c.Failure, pc.rule, program)
				}
				wantPooledBackends(t, h)
			})
		}
	}
}

// wantPooledBackends fails unless the server has backends that PgBouncer
// named for a worker (worker.AppName): a worker connected around the
// pooler names its own connection "outboxlab".
func wantPooledBackends(t *testing.T, h *machine.Harness) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var named int
	err := h.Inst.Conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'outboxlab w%'").Scan(&named)
	if err != nil {
		t.Fatal(err)
	}
	if named == 0 {
		t.Fatal("no server backend carries a worker's name: the workers did not connect through the pooler")
	}
}

// TestSessionLeaseNeedsItsSession: a session lease whose outcomes check
// that the caller's own session holds the lock passes behind a session
// pooler, where a client keeps its server connection, and fails behind a
// transaction pooler, where the lock stays on a server connection after
// its session (the client) has gone: "a session lease outlived its
// session". On single it passes the default budget (TestCorrectVariantsPass).
// que, which finishes by id, fails on single too, and fails the
// transaction pooler in a few steps, as good_job's :advisory strategy does.
func TestSessionLeaseNeedsItsSession(t *testing.T) {
	honestSearch(t)
	setRapidFlag(t, "rapid.seed", "1")
	setRapidFlag(t, "rapid.checks", "20")
	// Behind a transaction pooler a lock belongs to a server connection,
	// not to the worker: it outlives the worker's session, or goes with
	// a server connection another worker's lost reply ended.
	pooled := []string{"a session lease outlived its session", "a session lease ended while its session lived"}
	queRules := []string{"stale owner's complete applied", "stale owner's retry applied", "retry applied to a SENT row", "complete applied to a SENT row"}
	// good_job's :advisory strategy finishes by id too, and counts an
	// execution its retry decision does not.
	gjRules := append([]string{"event went DEAD before its attempt budget was spent", "claim took e1 past its attempt budget"}, queRules...)
	cases := []struct {
		path     string
		topo     pgserver.Topology
		rules    []string // nil: it passes
		maxSteps int      // the longest shrunk counterexample; 0: any
	}{
		{"testdata/correct/session_lease.sql", pgserver.PoolerSession, nil, 0},
		{"testdata/correct/session_lease.sql", pgserver.PoolerTransaction, pooled, 6},
		{"testdata/libraries/que.sql", pgserver.Single, queRules, 0},
		{"testdata/libraries/que.sql", pgserver.PoolerTransaction, append(slices.Clone(pooled), queRules...), 6},
		// Its five-statement claim replays less alike through the pooler
		// with faults on, so its programs shrink less: no bound.
		{"testdata/libraries/good_job_advisory.sql", pgserver.PoolerTransaction, append(slices.Clone(pooled), gjRules...), 0},
	}
	for _, tc := range cases {
		name := strings.TrimSuffix(tc.path[strings.LastIndex(tc.path, "/")+1:], ".sql")
		t.Run(name+"/"+string(tc.topo), func(t *testing.T) {
			var h *machine.Harness
			if tc.topo == pgserver.Single {
				h = harness(t, tc.path, machine.Default()) // the shared server
			} else {
				h = topologyHarness(t, tc.topo, tc.path, machine.Default())
			}
			c := search.On(h).Minimize(search.Measure(t.Name(), h, h.Check), shrinkBudget)
			program := strings.Join(c.Program, "\n")
			switch {
			case tc.rules == nil && c.Caught:
				t.Fatalf("%s failed on %s: %v\n%s", name, tc.topo, c.Failure, program)
			case tc.rules != nil && (c.Failure == nil || !slices.Contains(tc.rules, c.Failure.Rule)):
				t.Fatalf("%s on %s: %v, want one of %q\n%s", name, tc.topo, c.Failure, tc.rules, program)
			case tc.rules != nil && tc.maxSteps > 0 && c.Steps() > tc.maxSteps:
				t.Errorf("%s on %s: caught in %d steps, want at most %d\n%s", name, tc.topo, c.Steps(), tc.maxSteps, program)
			}
			if c.Failure != nil {
				t.Logf("%s on %s: %s in %d steps", name, tc.topo, c.Failure.Rule, c.Steps())
			}
		})
	}
}
