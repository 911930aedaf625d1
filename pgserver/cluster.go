package pgserver

import (
	"context"
	"errors"
	"fmt"
	"github.com/jackc/pgx/v5"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// cluster is a throwaway PostgreSQL cluster in a temporary directory, run by
// starting the postgres binary directly. fsync and full_page_writes are off
// for speed; synchronous_commit stays on because an immediate stop would
// otherwise lose commits that the test saw acknowledged.
type cluster struct {
	bin    string
	dir    string // removed by stop, or by the reaper if this process dies
	port   int
	cred   *syscall.Credential // nil when not running as root
	proc   *exec.Cmd
	exited chan struct{}
	reaper *exec.Cmd
	// settings are extra -c NAME=VALUE arguments, after (so overriding)
	// the defaults of startOnce: a topology's replication and WAL setup.
	settings []string
	// ctl is the administrative connection of control.go, if open.
	ctl *pgx.Conn
}

func findBinaries() (string, error) {
	var tried []string
	ok := func(dir string) bool {
		if dir == "" {
			return false
		}
		tried = append(tried, dir)
		_, e1 := os.Stat(filepath.Join(dir, "postgres"))
		_, e2 := os.Stat(filepath.Join(dir, "initdb"))
		return e1 == nil && e2 == nil
	}
	if d := os.Getenv("OUTBOXLAB_PG_BIN"); d != "" {
		if ok(d) {
			return d, nil
		}
		return "", fmt.Errorf("OUTBOXLAB_PG_BIN=%s has no postgres and initdb", d)
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); ok(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("postgres"); err == nil && ok(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if ok(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("no postgres and initdb in %s", strings.Join(append(tried, "PATH"), ", "))
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func startCluster(ctx context.Context, bin string) (*cluster, error) {
	return startClusterWith(ctx, bin, nil, (*cluster).startReaper)
}

// startClusterWith initialises and starts a cluster with extra settings and
// the given reaper (a topology's reaper also kills a postmaster's stopped
// children, which outlive it).
func startClusterWith(ctx context.Context, bin string, settings []string, reap func(*cluster) error) (*cluster, error) {
	c, err := newCluster(bin, settings, reap)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(c.dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = c.attrs()
	initdb.Dir = c.dir
	if out, err := initdb.CombinedOutput(); err != nil {
		c.stop()
		return nil, fmt.Errorf("initdb: %v: %s", err, lastLines(out, 5))
	}
	if err := c.start(ctx); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// newCluster makes a cluster's directory (without a data directory yet) and
// its reaper, and when running as root the credentials to run the server as.
func newCluster(bin string, settings []string, reap func(*cluster) error) (*cluster, error) {
	sweepAbandoned()
	dir, err := os.MkdirTemp("", tempPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, err
	}
	c := &cluster{bin: bin, dir: dir, settings: settings}
	if err := reap(c); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if os.Geteuid() == 0 {
		cred, err := unprivileged()
		if err != nil {
			c.stop()
			return nil, err
		}
		c.cred = cred
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			c.stop()
			return nil, err
		}
	}
	return c, nil
}

// unprivileged returns the credentials of the postgres user (or nobody):
// initdb and postgres refuse to run as root.
func unprivileged() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root and no postgres or nobody user to run the server as")
}

func (c *cluster) attrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

func (c *cluster) connString() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

func (c *cluster) start(ctx context.Context) error {
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		if c.port == 0 || attempt > 0 {
			p, err := freePort()
			if err != nil {
				return err
			}
			c.port = p
		}
		if lastErr = c.startOnce(ctx); lastErr == nil {
			return nil
		}
	}
	return lastErr
}

func (c *cluster) startOnce(ctx context.Context) error {
	logPath := filepath.Join(c.dir, "postgres.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		return err
	}
	defer logFile.Close()
	args := []string{"-D", filepath.Join(c.dir, "data"),
		"-p", strconv.Itoa(c.port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=",
		"-c", "fsync=off",
		"-c", "full_page_writes=off",
		"-c", "synchronous_commit=on",
		"-c", "max_connections=200",
		"-c", "log_min_messages=fatal",
		// No JIT: a multi-statement section's temporary tables have no
		// statistics, so the planner prices the statements that read
		// them above jit_above_cost, and each execution paid 40-360 ms
		// of compiling for microseconds of work (Solid Queue's claim:
		// 10 checks took 15 s with JIT, 3.3 s without). JIT never
		// changes a result, only its cost.
		"-c", "jit=off",
	}
	for _, kv := range c.settings {
		args = append(args, "-c", kv)
	}
	cmd := exec.Command(filepath.Join(c.bin, "postgres"), args...)
	cmd.SysProcAttr = c.attrs()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = c.dir
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	c.proc = cmd
	c.exited = make(chan struct{})
	go func(done chan struct{}) { cmd.Wait(); close(done) }(c.exited)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-c.exited:
			out, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres exited at start: %s", lastLines(out, 5))
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		conn, err := pgconn.Connect(pctx, c.connString())
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return errors.New("postgres did not accept connections within 30s")
}

// restart is an immediate stop (SIGQUIT: no checkpoint, crash recovery on
// the next start) followed by a start on the same port.
func (c *cluster) restart(ctx context.Context) error {
	c.kill(syscall.SIGQUIT)
	return c.start(ctx)
}

func (c *cluster) kill(sig syscall.Signal) {
	if c.proc == nil || c.proc.Process == nil {
		return
	}
	select {
	case <-c.exited:
		return
	default:
	}
	c.proc.Process.Signal(sig)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		syscall.Kill(-c.proc.Process.Pid, syscall.SIGKILL)
		<-c.exited
	}
}

func (c *cluster) stop() {
	c.kill(syscall.SIGQUIT)
	if c.proc != nil && c.proc.Process != nil {
		syscall.Kill(-c.proc.Process.Pid, syscall.SIGKILL) // any backend left behind
	}
	os.RemoveAll(c.dir)
	if c.reaper != nil {
		c.reaper.Process.Kill()
		c.reaper.Wait()
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
