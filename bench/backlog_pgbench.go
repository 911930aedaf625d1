package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/outboxlab/outboxlab/sut"
)

// Pgbench is the same claim run by PostgreSQL's own pgbench from one
// client, next to the bench's own figures at the same backlog: how much of
// a figure is the bench (Go, pgx, the timing) and how much the server.
type Pgbench struct {
	Transactions int     `json:"transactions"`
	P50US        float64 `json:"p50_us"`
	TPS          float64 `json:"tps"`    // transactions over the runs' -T seconds
	Rounds       int     `json:"rounds"` // runs, alternating with the bench's own`
	// P50Ratio is the bench's p50 over pgbench's, ThroughputRatio the
	// bench's claims per second over pgbench's: 1.1 and 0.91 are 10%.
	P50Ratio        float64 `json:"p50_ratio"`
	ThroughputRatio float64 `json:"throughput_ratio"`
}

// pgbenchScript is claimTx as a pgbench script. Parameters become pgbench
// variables, which -M prepared sends as bound parameters in text, as the
// bench's wireTx does.
func pgbenchScript(st sut.Stmt) string {
	var b strings.Builder
	stmts, _ := claimTx(st)
	for _, s := range stmts {
		b.WriteString(pgbenchVariables(s) + ";\n")
	}
	return b.String()
}

var positionalParam = regexp.MustCompile(`\$([0-9]+)`)

func pgbenchVariables(s sut.Stmt) string {
	sql := strings.TrimRight(strings.TrimSpace(s.SQL), ";")
	return positionalParam.ReplaceAllStringFunc(sql, func(m string) string {
		i, _ := strconv.Atoi(m[1:])
		if i < 1 || i > len(s.Params) {
			return m
		}
		return ":" + s.Params[i-1]
	})
}

// findPgbench looks where the server binaries are looked for.
func findPgbench() (string, error) {
	if dir := os.Getenv("OUTBOXLAB_PG_BIN"); dir != "" {
		if p := filepath.Join(dir, "pgbench"); isExecutable(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p, nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	if len(found) > 0 {
		return found[len(found)-1], nil
	}
	return "", fmt.Errorf("pgbench not found (PATH, OUTBOXLAB_PG_BIN, /usr/lib/postgresql/*/bin): Debian's postgresql package has it")
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode()&0o111 != 0
}

// pgbenchRun is what pgbench's runs of the claim saw.
type pgbenchRun struct {
	latencies []time.Duration
	seconds   int // the runs' -T, summed
	usage     clientUsage
}

// runPgbench runs the claim with pgbench from one client for d (whole
// seconds, at least one: pgbench's -T), against the protocol's schema, and
// reads each transaction's latency from its log.
func runPgbench(ctx context.Context, inst *sut.Instance, d time.Duration) (pgbenchRun, error) {
	return runPgbenchScript(ctx, inst.ConnString, inst.Statements.Schema, pgbenchScript(inst.Statements.Stmts[sut.Claim]), d)
}

// runPgbenchScript runs a pgbench script from one client for d, with
// schema first on the search path.
func runPgbenchScript(ctx context.Context, connString, schema, text string, d time.Duration) (pgbenchRun, error) {
	bin, err := findPgbench()
	if err != nil {
		return pgbenchRun{}, err
	}
	cfg, err := pgconn.ParseConfig(connString)
	if err != nil {
		return pgbenchRun{}, err
	}
	dir, cleanup, err := reapedTempDir(fmt.Sprintf("outboxlab-pgbench-%d-", os.Getpid()))
	if err != nil {
		return pgbenchRun{}, err
	}
	defer cleanup()
	script := filepath.Join(dir, "claim.sql")
	if err := os.WriteFile(script, []byte(text), 0o644); err != nil {
		return pgbenchRun{}, err
	}
	secs := max(1, int(math.Round(d.Seconds())))
	cmd := exec.CommandContext(ctx, bin, "-n", "-M", "prepared", "-c", "1", "-j", "1",
		"-T", strconv.Itoa(secs), "-D", "worker=pgbench", "-f", script,
		"-l", "--log-prefix", filepath.Join(dir, "log"), cfg.Database)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PGHOST="+cfg.Host, "PGPORT="+strconv.Itoa(int(cfg.Port)),
		"PGUSER="+cfg.User, "PGPASSWORD="+cfg.Password, "PGOPTIONS=-c search_path="+schema)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := runDyingWithUs(cmd); err != nil {
		return pgbenchRun{}, fmt.Errorf("pgbench: %w\n%s", err, lastLines(out.String(), 5))
	}
	lat, err := pgbenchLatencies(dir)
	if err == nil && len(lat) == 0 {
		err = fmt.Errorf("pgbench ran no transaction:\n%s", lastLines(out.String(), 5))
	}
	return pgbenchRun{latencies: lat, seconds: secs, usage: usageOf(cmd.ProcessState)}, err
}

// pgbenchLatencies reads the per-transaction log: the third field is the
// latency in microseconds (a failed transaction has none and is skipped).
func pgbenchLatencies(dir string) ([]time.Duration, error) {
	logs, _ := filepath.Glob(filepath.Join(dir, "log.*"))
	var out []time.Duration
	for _, l := range logs {
		f, err := os.Open(l)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 3 {
				continue
			}
			if v, err := strconv.ParseInt(fields[2], 10, 64); err == nil {
				out = append(out, time.Duration(v)*time.Microsecond)
			}
		}
		f.Close()
	}
	return out, nil
}

// runDyingWithUs runs cmd to its end; the child gets SIGKILL if this
// process dies (Pdeathsig). Pdeathsig fires when the OS thread that
// started the child ends, not the process: so every child is started by
// one goroutine locked to a thread of its own that never ends. (A locked
// goroutine that returns ends its thread, and any child that thread had
// started, such as the harness's PostgreSQL, would be killed with it.)
func runDyingWithUs(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	spawnerOnce.Do(func() { go spawner() })
	reply := make(chan error, 1)
	spawns <- spawnRequest{cmd, reply}
	if err := <-reply; err != nil {
		return err
	}
	return cmd.Wait()
}

type spawnRequest struct {
	cmd   *exec.Cmd
	reply chan error
}

var (
	spawnerOnce sync.Once
	spawns      = make(chan spawnRequest)
)

func spawner() {
	runtime.LockOSThread() // for good: this thread must outlive its children
	for r := range spawns {
		r.reply <- r.cmd.Start()
	}
}

// reapedTempDir makes a temporary directory that goes even if this
// process is killed: a shell waits for its stdin, which only this process
// holds open, and removes the directory when it closes.
func reapedTempDir(prefix string) (string, func(), error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	reaper := exec.Command("/bin/sh", "-c", `cat >/dev/null; rm -rf "$1"`, "outboxlab-reaper", dir)
	reaper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := reaper.StdinPipe()
	if err == nil {
		err = reaper.Start()
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("start the temp dir's reaper: %w", err)
	}
	return dir, func() {
		os.RemoveAll(dir)
		stdin.Close()
		reaper.Wait()
	}, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
