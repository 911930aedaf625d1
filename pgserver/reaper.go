package pgserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/outboxlab/outboxlab/internal/proc"
)

const tempPrefix = "outboxlab-pg-"

// reaperScript waits for its stdin to close (the harness process ended, by
// any means, SIGKILL included), then kills the cluster's process group and
// removes its directory. It runs in its own process group so that killing
// the harness's group does not take it down first.
const reaperScript = "cat >/dev/null\n" + reaperBody

// reaperBody is what every reaper does last: kill the postmaster's
// group and remove the directory.
const reaperBody = `pidfile="$1/data/postmaster.pid"
if [ -f "$pidfile" ]; then
  pid=$(head -n 1 "$pidfile")
  kill -9 -- "-$pid" 2>/dev/null || kill -9 "$pid" 2>/dev/null
  sleep 0.2
fi
rm -rf "$1"
`

func (c *cluster) startReaper() error { return c.startReaperScript(reaperScript) }

// startReaperScript starts script as the cluster's reaper: its stdin is a
// pipe this process holds until it ends, its argument the cluster's
// directory.
func (c *cluster) startReaperScript(script string) error {
	cmd := exec.Command("/bin/sh", "-c", script, "outboxlab-reaper", c.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	w, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	// The write end stays open, unused, for the life of this process; the
	// kernel closes it when the process ends.
	_ = w
	c.reaper = cmd
	return nil
}

// sweepAbandoned removes cluster directories left by runs whose process no
// longer exists (for example when the reaper itself was killed).
func sweepAbandoned() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempPrefix+"*"))
	for _, d := range dirs {
		rest := strings.TrimPrefix(filepath.Base(d), tempPrefix)
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || pid == os.Getpid() || proc.Alive(pid) {
			continue
		}
		os.RemoveAll(d)
	}
}
