package broker

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

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

// start runs the cluster on e.port, chosen the first time and kept so
// that clients find it again after a restart. The port is below the
// kernel's ephemeral range, so that no outgoing connection takes it while
// the broker is down; a port another listener took meanwhile is waited
// for a little.
func (e *embedded) start() error {
	if e.port == 0 {
		port, err := freePort()
		if err != nil {
			return err
		}
		e.port = port
	}
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.DataDir(filepath.Join(e.dir, "data")),
		kfake.ClusterID("outboxlab"), kfake.Ports(e.port)}
	var c *kfake.Cluster
	var err error
	for range 20 {
		if c, err = kfake.NewCluster(opts...); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
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

// freePort finds a port nobody listens on, below the ephemeral range
// (Linux's default starts at 32768).
func freePort() (int, error) {
	for range 100 {
		port := 20000 + rand.IntN(12000)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		ln.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free port for the broker between 20000 and 32000")
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
