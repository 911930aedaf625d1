package pgserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// A postmaster's children call setsid(), so neither its process group nor
// its parent link finds them once it is dead; and a child the harness
// stopped (a stalled WAL sender, a frozen WAL writer) does not notice the
// postmaster's death and would live on. What every one of them shares is its
// working directory: the postmaster chdirs into the data directory before
// it forks. The topologies find a server's processes by that.

// topologyReaperScript is reaperScript for a server whose children may be
// stopped: when the harness ends, it kills every process whose working
// directory is the data directory (the postmaster first, so that it forks
// no more), then removes the cluster directory.
const topologyReaperScript = `cat >/dev/null
data="$1/data"
pidfile="$data/postmaster.pid"
if [ -f "$pidfile" ]; then
  kill -9 "$(head -n 1 "$pidfile")" 2>/dev/null
fi
for round in 1 2; do
  for p in /proc/[0-9]*; do
    [ "$p/cwd" -ef "$data" ] && kill -9 "${p#/proc/}" 2>/dev/null
  done
  sleep 0.1
done
rm -rf "$1"
`

func (c *cluster) startTopologyReaper() error { return c.startReaperScript(topologyReaperScript) }

// serverProcesses lists the live processes running in the data directory
// (a zombie has no working directory, so it is not listed).
func serverProcesses(dataDir string) []int {
	want, err := os.Stat(dataDir)
	if err != nil {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if fi, err := os.Stat(filepath.Join("/proc", e.Name(), "cwd")); err == nil && os.SameFile(fi, want) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killAll kills every process of the server with SIGKILL, losing whatever
// WAL was still in its shared buffers, and waits until none is left, so
// that a new postmaster can take the data directory over.
func (c *cluster) killAll() error {
	c.dropControl()
	data := filepath.Join(c.dir, "data")
	if c.proc != nil && c.proc.Process != nil {
		c.proc.Process.Signal(syscall.SIGSTOP) // forks nothing while we look
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := serverProcesses(data)
		if c.proc != nil && c.proc.Process != nil {
			select {
			case <-c.exited:
			default:
				pids = append(pids, c.proc.Process.Pid)
			}
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v of %s still alive 10s after SIGKILL", pids, data)
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// destroy kills the server, removes its directory and ends its reaper.
func (c *cluster) destroy() {
	c.killAll()
	os.RemoveAll(c.dir)
	if c.reaper != nil {
		c.reaper.Process.Kill()
		c.reaper.Wait()
		c.reaper = nil
	}
}

// stopProcess sends SIGSTOP and waits until the kernel reports the process
// stopped: only then has a send it was making (WAL into a socket) ended.
func stopProcess(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("SIGSTOP %d: %w", pid, err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if st, err := processState(pid); err != nil || st == 'T' || st == 't' {
			return err
		}
	}
	return fmt.Errorf("process %d not stopped 5s after SIGSTOP", pid)
}

// processState is the state letter of /proc/PID/stat (R, S, T, Z...).
func processState(pid int) (byte, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name is in parentheses and may hold spaces; the state
	// follows the last closing one.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return 0, errors.New("unreadable /proc stat")
	}
	return b[i+2], nil
}

// stopWhileIdle stops a server process (the WAL writer, a WAL sender) at a
// moment it holds no lock: a process stopped inside a spinlock or an LWLock
// would hang every other process that needs it. The server reports a wait
// of type Activity or Client only from inside its latch wait, where none is
// held; any other moment, the process is let go and stopped again.
func stopWhileIdle(ctx context.Context, conn *pgx.Conn, pid int) error {
	for attempt := 0; attempt < 200; attempt++ {
		if err := stopProcess(pid); err != nil {
			return err
		}
		var idle bool
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := conn.QueryRow(qctx, `SELECT coalesce(wait_event_type IN ('Activity', 'Client'), false)
			FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&idle)
		cancel()
		if err != nil {
			syscall.Kill(pid, syscall.SIGCONT)
			return fmt.Errorf("read the wait of process %d: %w", pid, err)
		}
		if idle {
			return nil
		}
		syscall.Kill(pid, syscall.SIGCONT)
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("process %d was never idle when stopped", pid)
}
