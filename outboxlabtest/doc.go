// Package outboxlabtest runs outboxlab's search from a Go test of your own
// repository, on your own claim SQL: the same state machine, shrinking and
// verdict as `outboxlab check`, failing the test with the broken rule, the
// shrunk program and the command that reproduces it.
//
// The test binary doubles as the worker processes the search drives (each
// simulated worker is a real process, paused with SIGSTOP and killed with
// SIGKILL), so the package's TestMain must be Main:
//
//	func TestMain(m *testing.M) { outboxlabtest.Main(m) }
//
//	func TestOutboxProtocol(t *testing.T) {
//		outboxlabtest.Check(t, "db/outbox.sql")
//	}
//
// The protocol file is in the format of docs/protocol-format.md; its path
// is relative to the package directory, where go test runs. A malformed
// file fails the test with FILE:LINE and what is wrong. A protocol written
// in Go (package driver) is checked by CheckDriver on the name it is
// registered under (docs/go-drivers.md).
//
// The server is found or started as the command does: DATABASE_URL (or
// the libpq PG* variables), else a throwaway cluster from local PostgreSQL
// server binaries, else a Docker container when the test binary imports
// github.com/outboxlab/outboxlab/pgserver/docker for its side effect (left
// out otherwise, with the Docker client); Main stops whatever was started.
// With Topology, the check runs on that deployment instead (async-commit,
// async-standby, sync-standby), which the harness builds from local server
// binaries.
//
// The budget follows rapid's flags and variables, which win over the
// options in code: -rapid.checks (RAPID_CHECKS), -rapid.steps
// (RAPID_STEPS), -rapid.seed (RAPID_SEED), -rapid.shrinktime. Under -short
// a check budget is divided by 5 and the steps by 2, as rapid does.
// OUTBOXLAB_SHARD=K/N runs part K of N of the budget (see Shard). A run
// that never reached a coverage class its protocol makes possible fails as
// inconclusive: a pass that proved nothing is not a pass. When
// OUTBOXLAB_ARTIFACTS names a directory, a counterexample is also written
// there as a program file, for a CI job to keep.
//
// Check holds rapid's flags while it runs: Check calls in one test binary
// run one after another, t.Parallel or not.
package outboxlabtest
