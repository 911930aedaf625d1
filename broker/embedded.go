package broker

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/outboxlab/outboxlab/internal/proc"
	"github.com/twmb/franz-go/pkg/kfake"
)

const dataDirPrefix = "outboxlab-kafka-"

// embedded is a one-node kfake cluster in this process, persisting to a
// temporary directory so that a restart keeps what it acknowledged. The
// cluster dies with the process; the directory is removed by close, by a
// reaper process when this one is killed, and failing both by the next
// run's sweep.
type embedded struct {
	mu      sync.Mutex
	cluster *kfake.Cluster
	addr    string
	port    int
	dir     string
	reaper  *exec.Cmd
	// reaperIn is the reaper's stdin: closed by close, or by the kernel
	// when this process ends.
	reaperIn io.WriteCloser
}

func startEmbedded() (*embedded, error) {
	sweepAbandonedDataDirs()
	dir, err := os.MkdirTemp("", dataDirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, err
	}
	e := &embedded{dir: dir}
	if err := e.startReaper(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := e.start(); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

// start runs the cluster on e.port (0 the first time: any free port,
// then kept so that clients find it again after a restart).
func (e *embedded) start() error {
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.DataDir(filepath.Join(e.dir, "data")), kfake.ClusterID("outboxlab")}
	if e.port != 0 {
		opts = append(opts, kfake.Ports(e.port))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return fmt.Errorf("start kfake: %w", err)
	}
	addr := c.ListenAddrs()[0]
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		c.Close()
		return err
	}
	e.port, _ = strconv.Atoi(port)
	e.cluster, e.addr = c, addr
	return nil
}

func (e *embedded) restart() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cluster != nil {
		e.cluster.Close()
		e.cluster = nil
	}
	return e.start()
}

func (e *embedded) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cluster != nil {
		e.cluster.Close()
		e.cluster = nil
	}
	os.RemoveAll(e.dir)
	if e.reaper != nil {
		// Its work is done: let it run now rather than wait for the exit.
		e.reaperIn.Close()
		e.reaper.Wait()
		e.reaper = nil
	}
}

// reaperScript waits for its stdin to close (this process ended, however),
// then removes the data directory. Own process group: a kill of the
// harness's group does not take it down first.
const reaperScript = `cat >/dev/null
rm -rf "$1"
`

func (e *embedded) startReaper() error {
	cmd := exec.Command("/bin/sh", "-c", reaperScript, "outboxlab-kafka-reaper", e.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	w, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	e.reaper, e.reaperIn = cmd, w
	return nil
}

// sweepAbandonedDataDirs removes data directories of runs whose process
// is gone (when even the reaper was killed).
func sweepAbandonedDataDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dataDirPrefix+"*"))
	for _, d := range dirs {
		rest := strings.TrimPrefix(filepath.Base(d), dataDirPrefix)
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || pid == os.Getpid() || proc.Alive(pid) {
			continue
		}
		os.RemoveAll(d)
	}
}
