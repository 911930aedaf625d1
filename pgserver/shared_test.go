package pgserver

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSharedTopologyIsOnePerProcess: two calls for a topology give the same
// deployment, another topology (and Shared, Single's) a server of its own,
// a bad name an error; CloseShared stops them all (no server process, no
// cluster directory, nothing listening on the front) and a later call
// starts a new one.
func TestSharedTopologyIsOnePerProcess(t *testing.T) {
	if _, err := findBinaries(); err != nil {
		t.Fatalf("topologies need local server binaries: %v", err)
	}
	withoutUserServer(t)
	defer CloseShared()
	first, err := SharedTopology(AsyncCommit)
	if err != nil {
		t.Fatal(err)
	}
	again, err := SharedTopology(AsyncCommit)
	if err != nil || again != first {
		t.Fatalf("a second SharedTopology(async-commit) gave %p (%v), want the first, %p", again, err, first)
	}
	if first.Topology != AsyncCommit || first.deploy == nil {
		t.Fatalf("SharedTopology(async-commit) is %s, topology %s", first, first.Topology)
	}
	single, err := Shared()
	if err != nil {
		t.Fatal(err)
	}
	if same, err := SharedTopology(Single); err != nil || same != single || single == first {
		t.Fatalf("SharedTopology(single) gave %p (%v); want Shared's %p, not async-commit's %p", same, err, single, first)
	}
	if _, err := SharedTopology("pooler"); err == nil || !strings.Contains(err.Error(), "want one of single, async-commit") {
		t.Fatalf("SharedTopology(pooler): error %v, want one naming the topologies", err)
	}

	dirs := first.deploy.dirs()
	if single.cluster != nil {
		dirs = append(dirs, single.cluster.dir, filepath.Join(single.cluster.dir, "data"))
	}
	var pids []int
	for _, d := range dirs {
		pids = append(pids, serverProcesses(d)...)
	}
	if len(pids) < 4 { // a postmaster and three children at least
		t.Fatalf("found %d server processes in %v, want a server's worth", len(pids), dirs)
	}
	front := first.deploy.front.ln.Addr().String()
	CloseShared()
	if left := leftOver(dirs, pids, front); len(left) > 0 {
		t.Fatalf("after CloseShared, still there: %s", strings.Join(left, ", "))
	}
	next, err := SharedTopology(AsyncCommit)
	if err != nil {
		t.Fatal(err)
	}
	if next == first {
		t.Fatal("after CloseShared, SharedTopology(async-commit) gave the closed server again")
	}
}

// leftOver lists the directories that exist, the processes that live (a
// zombie does not) and whether something still accepts on addr.
func leftOver(dirs []string, pids []int, addr string) []string {
	var left []string
	for _, d := range dirs {
		if exists(d) {
			left = append(left, "directory "+d)
		}
	}
	for _, pid := range pids {
		if st, err := processState(pid); err == nil && st != 'Z' {
			left = append(left, fmt.Sprintf("process %d (state %c)", pid, st))
		}
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		left = append(left, "the front on "+addr)
	}
	return left
}

// withoutUserServer unsets, for the test, the variables that name a
// server of the user's (DATABASE_URL, PG*): a topology is built from local
// server binaries and refuses to start beside one, so that the test runs
// also when the suite runs against such a server. (An empty PGPORT is not
// an unset one: the server takes it for its port.)
func withoutUserServer(t *testing.T) {
	for _, k := range []string{"DATABASE_URL", "PGHOST", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE"} {
		t.Setenv(k, "") // what restores it after the test
		os.Unsetenv(k)
	}
}
