package pgserver

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// holdTopologiesEnv makes TestHoldTopologiesHelper, in a child test
// binary, start topologies with stopped server processes in them, print
// their directories and processes, and wait to be killed.
const holdTopologiesEnv = "OUTBOXLAB_TEST_HOLD_TOPOLOGIES"

// TestNothingOfATopologyOutlivesAKilledRun kills, with SIGKILL, a process
// that holds an async-commit server whose WAL writer MarkDurable stopped,
// a sync-standby pair whose WAL sender Stall stopped (processes that do
// not notice their postmaster's death) and a pooler-transaction server
// whose PgBouncer holds a client, and checks that no process and no
// directory of any is left a few seconds later.
func TestNothingOfATopologyOutlivesAKilledRun(t *testing.T) {
	t.Parallel()
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "-test.run=^TestHoldTopologiesHelper$")
	cmd.Env = append(os.Environ(), holdTopologiesEnv+"=1")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	watchdog := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	defer watchdog.Stop()
	var dirs []string
	var pids []int
	lines := bufio.NewScanner(out)
	for lines.Scan() && lines.Text() != "ready" {
		kind, value, _ := strings.Cut(lines.Text(), " ")
		switch kind {
		case "dir":
			dirs = append(dirs, value)
		case "pid":
			pid, _ := strconv.Atoi(value)
			pids = append(pids, pid)
		default:
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child could not hold its topologies: %s", lines.Text())
		}
	}
	if len(dirs) != 4 || len(pids) < 17 { // a postmaster and three children each, at least, and PgBouncer
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child reported %d directories and %d processes, want 4 and a server's worth each", len(dirs), len(pids))
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	var left []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		left = left[:0]
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
		if len(left) == 0 {
			return
		}
	}
	t.Fatalf("10s after SIGKILL, still there: %s", strings.Join(left, ", "))
}

// TestHoldTopologiesHelper is the child of
// TestNothingOfATopologyOutlivesAKilledRun, and passes at once otherwise.
func TestHoldTopologiesHelper(t *testing.T) {
	if os.Getenv(holdTopologiesEnv) == "" {
		return
	}
	fail := func(err error) { fmt.Println("error", err); os.Exit(1) }
	bin, err := findBinaries()
	if err != nil {
		fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topologies := []Topology{AsyncCommit, SyncStandby, PoolerTransaction}
	servers := make(chan *Server, len(topologies))
	for _, topo := range topologies {
		go func() {
			srv, err := startTopology(ctx, topo, bin)
			if err != nil {
				fail(err)
			}
			switch topo {
			case AsyncCommit:
				err = srv.MarkDurable(ctx)
			case SyncStandby:
				err = srv.Stall(ctx)
			default:
				err = holdPoolerClient(ctx, srv)
			}
			if err != nil {
				fail(err)
			}
			servers <- srv
		}()
	}
	for range topologies {
		srv := <-servers
		if srv.pool != nil {
			fmt.Println("dir", srv.cluster.dir)
			fmt.Println("pid", srv.pool.proc.Process.Pid)
			for _, pid := range serverProcesses(filepath.Join(srv.cluster.dir, "data")) {
				fmt.Println("pid", pid)
			}
			continue
		}
		for _, c := range []*cluster{srv.deploy.primary, srv.deploy.standby} {
			if c == nil {
				continue
			}
			fmt.Println("dir", c.dir)
			for _, pid := range serverProcesses(filepath.Join(c.dir, "data")) {
				fmt.Println("pid", pid)
			}
		}
	}
	fmt.Println("ready")
	select {}
}

// holdPoolerClient leaves a client of srv's PgBouncer in an open
// transaction, so that a server backend is busy for it when the run dies.
func holdPoolerClient(ctx context.Context, srv *Server) error {
	cs, err := srv.WorkerConnString(ctx, "")
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, cs)
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "BEGIN; SELECT pg_advisory_xact_lock(1)")
	return err
}
