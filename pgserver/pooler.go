package pgserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// pooler is a PgBouncer between the workers and a cluster the harness owns
// (the pooler topologies). It runs from Debian's pgbouncer binary, as the
// cluster's user when this process is root (PgBouncer refuses root, like
// postgres), in the cluster's directory, so that the cluster's reaper
// removes its config and socket with the rest; the reaper also kills it
// (poolerReaperScript).
type pooler struct {
	mode     string // PgBouncer's pool_mode: transaction or session
	size     int    // default_pool_size: server connections per database alias
	dir      string // inside the cluster's directory
	port     int
	server   int      // the cluster's port
	schemas  []string // a database alias each (alias)
	cred     *syscall.Credential
	proc     *exec.Cmd
	exited   chan struct{}
	database string // the server's database every alias stands for
}

// PoolSize is the transaction pooler's default_pool_size: smaller than the
// most workers a check runs (machine.Default's MaxWorkers, 4), so
// that the workers' transactions really share server connections, as
// under every production transaction pooler. The root package's
// TestTransactionPoolIsSmallerThanTheWorkers holds the two together.
const PoolSize = 3

// sessionPoolSize is the session pooler's: there a client holds its
// server connection for as long as it is connected, so a pool smaller
// than the clients leaves a worker no server at all, waiting forever to
// run its first statement. It is sized for every worker and spare.
const sessionPoolSize = 20

// poolerReaperScript is reaperScript for a cluster with a pooler in it:
// the pooler (its pid in pooler.pid, written right after it starts)
// dies first, so that nothing reconnects to the dying server.
const poolerReaperScript = `cat >/dev/null
if [ -f "$1/pooler.pid" ]; then
  kill -9 "$(cat "$1/pooler.pid")" 2>/dev/null
fi
` + reaperBody

func (c *cluster) startPoolerReaper() error { return c.startReaperScript(poolerReaperScript) }

// resetKeepingPath is the session pooler's server_reset_query: what
// DISCARD ALL does, but the search_path survives. Each database alias
// gives its server connections the search_path of its schema once, when
// they connect (connect_query); DISCARD ALL would reset it to the
// server's default for the next client of the alias, where a production
// deployment that sets search_path per role or database keeps it.
// (DISCARD ALL itself cannot run among other statements.)
const resetKeepingPath = `CLOSE ALL; SET SESSION AUTHORIZATION DEFAULT; DEALLOCATE ALL; UNLISTEN *; ` +
	`SELECT pg_advisory_unlock_all(); DISCARD PLANS; DISCARD TEMP; DISCARD SEQUENCES; ` +
	`DO $$DECLARE p text := current_setting('search_path'); BEGIN RESET ALL; PERFORM set_config('search_path', p, false); END$$`

// findPgBouncer is the pgbouncer binary: OUTBOXLAB_PGBOUNCER, else PATH,
// else Debian's /usr/sbin/pgbouncer (not on a non-root PATH).
func findPgBouncer() (string, error) {
	if p := os.Getenv("OUTBOXLAB_PGBOUNCER"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("OUTBOXLAB_PGBOUNCER=%s: %w", p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer", nil
	}
	return "", errors.New("no pgbouncer binary (install Debian's pgbouncer package, or set OUTBOXLAB_PGBOUNCER)")
}

// poolSize is a mode's default_pool_size.
func poolSize(mode string) int {
	if mode == "session" {
		return sessionPoolSize
	}
	return PoolSize
}

// startPooler starts PgBouncer in front of c, in mode, with size server
// connections a database alias.
func startPooler(ctx context.Context, c *cluster, mode string, size int) (*pooler, error) {
	bin, err := findPgBouncer()
	if err != nil {
		return nil, err
	}
	p := &pooler{mode: mode, size: size, dir: filepath.Join(c.dir, "pgbouncer"), server: c.port, cred: c.cred, database: "postgres"}
	if err := os.Mkdir(p.dir, 0o700); err != nil {
		return nil, fmt.Errorf("pooler: %w", err)
	}
	if p.cred != nil {
		if err := os.Chown(p.dir, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			return nil, fmt.Errorf("pooler: %w", err)
		}
	}
	if err := p.writeFile("users.txt", `"postgres" ""`+"\n"); err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		if p.port, err = freePort(); err != nil {
			return nil, err
		}
		if lastErr = p.startOnce(ctx, bin, c.dir); lastErr == nil {
			return p, nil
		}
	}
	return nil, lastErr
}

func (p *pooler) startOnce(ctx context.Context, bin, clusterDir string) error {
	if err := p.writeConfig(); err != nil {
		return err
	}
	cmd := exec.Command(bin, filepath.Join(p.dir, "pgbouncer.ini"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	cmd.Dir = p.dir
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start pgbouncer: %w", err)
	}
	p.proc, p.exited = cmd, make(chan struct{})
	go func(done chan struct{}) { cmd.Wait(); close(done) }(p.exited)
	// The reaper reads this should the harness die from here on (until
	// it is written, Pdeathsig alone covers a SIGKILLed harness).
	if err := os.WriteFile(filepath.Join(clusterDir, "pooler.pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		p.stop()
		return fmt.Errorf("pooler: %w", err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		select {
		case <-p.exited:
			log, _ := os.ReadFile(filepath.Join(p.dir, "pgbouncer.log"))
			return fmt.Errorf("pgbouncer exited at start: %s", lastLines(log, 3))
		case <-ctx.Done():
			p.stop()
			return ctx.Err()
		default:
		}
		if conn, err := p.admin(ctx); err == nil {
			conn.Close(context.Background())
			return nil
		}
	}
	p.stop()
	return errors.New("pgbouncer did not accept connections within 10s")
}

// writeConfig writes pgbouncer.ini: a database alias for each schema the
// workers use, and "*" for any other database.
func (p *pooler) writeConfig() error {
	var b strings.Builder
	fmt.Fprintf(&b, "[databases]\n")
	for _, s := range p.schemas {
		// A connect_query, not the client's search_path: PgBouncer 1.18
		// refuses any startup parameter it does not track (it ignores
		// the workers' search_path, see ignore_startup_parameters), and
		// a SET would stay with one server connection.
		fmt.Fprintf(&b, "%s = host=127.0.0.1 port=%d dbname=%s connect_query='SET search_path = %s'\n", s, p.server, p.database, s)
	}
	fmt.Fprintf(&b, "* = host=127.0.0.1 port=%d\n", p.server)
	fmt.Fprintf(&b, `[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir = %s
auth_type = trust
auth_file = %s
admin_users = postgres
pool_mode = %s
default_pool_size = %d
max_client_conn = 500
ignore_startup_parameters = search_path,extra_float_digits
; after a server restart, reconnect at once rather than in 15 s
server_login_retry = 0.05
server_connect_timeout = 5
logfile = %s
`, p.port, p.dir, filepath.Join(p.dir, "users.txt"), p.mode, p.size, filepath.Join(p.dir, "pgbouncer.log"))
	if p.mode == "session" {
		fmt.Fprintf(&b, "server_reset_query = %s\n", resetKeepingPath)
	}
	return p.writeFile("pgbouncer.ini", b.String())
}

func (p *pooler) writeFile(name, text string) error {
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return fmt.Errorf("pooler: %w", err)
	}
	if p.cred != nil {
		if err := os.Chown(path, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			return fmt.Errorf("pooler: %w", err)
		}
	}
	return nil
}

// admin connects to PgBouncer's console (the pgbouncer database), which
// speaks only the simple protocol.
func (p *pooler) admin(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	cs := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/pgbouncer?sslmode=disable&default_query_exec_mode=simple_protocol", p.port)
	return pgx.Connect(cctx, cs)
}

// reload rewrites the config and has PgBouncer read it before returning:
// RELOAD on the console answers once the new databases are in place.
func (p *pooler) reload(ctx context.Context) error {
	if err := p.writeConfig(); err != nil {
		return err
	}
	conn, err := p.admin(ctx)
	if err != nil {
		return fmt.Errorf("pooler: console: %w", err)
	}
	defer conn.Close(context.Background())
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := conn.PgConn().Exec(rctx, "RELOAD").Close(); err != nil {
		return fmt.Errorf("pooler: reload: %w", err)
	}
	return nil
}

// schemaName is what a database alias may be named: a schema name as
// sut.NewSchemaName makes them, nothing to quote in the config.
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// alias makes sure schema has its database alias, and returns its name.
func (p *pooler) alias(ctx context.Context, schema string) (string, error) {
	if !schemaName.MatchString(schema) {
		return "", fmt.Errorf("pooler: schema %q: want a lower-case identifier of at most 63 characters", schema)
	}
	for _, s := range p.schemas {
		if s == schema {
			return s, nil
		}
	}
	p.schemas = append(p.schemas, schema)
	if err := p.reload(ctx); err != nil {
		p.schemas = p.schemas[:len(p.schemas)-1]
		return "", err
	}
	return schema, nil
}

// restarted follows the server through a restart: to its new port if it
// had to take another one, and until every database's pool has reached it
// again. A worker connecting while the server was down (a spare, say) made
// PgBouncer's login to the server fail, and until its next login succeeds
// PgBouncer refuses a new client that would need one ("server login has
// been failing, try again later"): a statement after the restart then
// failed as if a fault had hit it.
func (p *pooler) restarted(ctx context.Context, port int) error {
	if port != p.server {
		p.server = port
		if err := p.reload(ctx); err != nil {
			return err
		}
	}
	for _, db := range append([]string{p.database}, p.schemas...) {
		if err := p.reach(ctx, db); err != nil {
			return fmt.Errorf("pooler: after the restart: %w", err)
		}
	}
	return nil
}

// reach runs a statement through database db's pool until one succeeds.
func (p *pooler) reach(ctx context.Context, db string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		err := func() error {
			conn, err := pgx.Connect(ctx, p.connString(db)+"&default_query_exec_mode=simple_protocol")
			if err != nil {
				return err
			}
			defer conn.Close(context.Background())
			_, err = conn.Exec(ctx, "SELECT 1")
			return err
		}()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("database %s: %w", db, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (p *pooler) connString(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.port, database)
}

func (p *pooler) stop() {
	if p.proc == nil || p.proc.Process == nil {
		return
	}
	syscall.Kill(-p.proc.Process.Pid, syscall.SIGKILL)
	<-p.exited
}
