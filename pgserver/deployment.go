package pgserver

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// deployment is the servers of one topology other than Single, behind the
// front every client connects to. Server.mu serialises its methods.
type deployment struct {
	topo     Topology
	bin      string
	settings []string // every node's -c settings (roles swap on failover)
	front    *front
	primary  *cluster
	standby  *cluster // nil for AsyncCommit, and after a failed rebuild

	frozen    int       // AsyncCommit: the WAL writer MarkDurable stopped
	stalled   int       // the WAL sender Stall stopped
	stalledAt time.Time // when Stall stopped it
}

// asyncCommitSettings keep a small workload's commits in the WAL buffers,
// unwritten, between MarkDurable and Crash. What survives a SIGKILL of the
// server is what was write()n to the kernel, flushed or not (the cluster
// runs with fsync=off), so everything that writes WAL early is kept away:
// the WAL writer, which writes all of it on every round and is woken early
// by an async commit once wal_writer_flush_after is unflushed (MarkDurable
// stops it outright); a backend that needs a WAL buffer page still holding
// unwritten WAL; a checkpoint; and the background writer, which writes the
// WAL up to a dirty page's LSN before writing the page. What remains is
// inherent: a commit that drops or truncates a (non-temporary) table is
// always synchronous and writes everything before it, and so does any
// commit made under synchronous_commit=on.
var asyncCommitSettings = []string{
	"synchronous_commit=off",
	"wal_writer_delay=10s", // the maximum
	"wal_writer_flush_after=1GB",
	"wal_buffers=32MB",
	"checkpoint_timeout=1d",
	"bgwriter_lru_maxpages=0",
}

// standbyName is the application_name every standby streams under, so
// that synchronous_standby_names, set on every node, names the standby of
// whichever node is primary.
const standbyName = "outboxlab_standby"

func standbySettings(t Topology) []string {
	s := []string{
		// A base backup's standby streams from the backup's start.
		"wal_keep_size=256MB",
		// A stalled WAL sender must not be replaced by a new connection
		// that streams the stalled WAL after all.
		"wal_receiver_timeout=0",
		// A standby whose primary died retries streaming only after
		// this long, and a promotion waits for that: at the default 5s
		// a promotion took a second, at 20ms it takes 50ms.
		"wal_retrieve_retry_interval=20ms",
	}
	if t == SyncStandby {
		s = append(s, "synchronous_standby_names="+standbyName)
	}
	return s
}

func startDeployment(ctx context.Context, t Topology, bin string) (*deployment, error) {
	d := &deployment{topo: t, bin: bin, settings: asyncCommitSettings}
	if t.hasStandby() {
		d.settings = standbySettings(t)
	}
	primary, err := startClusterWith(ctx, bin, d.settings, (*cluster).startTopologyReaper)
	if err != nil {
		return nil, fmt.Errorf("primary: %w", err)
	}
	d.primary = primary
	if d.front, err = startFront(primary.addr()); err != nil {
		d.close()
		return nil, err
	}
	if t.hasStandby() {
		if d.standby, err = startStandby(ctx, d, primary); err != nil {
			d.close()
			return nil, fmt.Errorf("standby: %w", err)
		}
	}
	return d, nil
}

// crash is AsyncCommit's rewind: every server process dies at once, so WAL
// still in its shared buffers is lost with acknowledged commits in it, and
// the server restarts (crash recovery) behind the same front.
func (d *deployment) crash(ctx context.Context) error {
	if d.topo != AsyncCommit {
		return fmt.Errorf("crash: topology %s fails over instead (Stall, Failover)", d.topo)
	}
	d.front.hold()
	if err := d.primary.killAll(); err != nil {
		return fmt.Errorf("crash: %w", err)
	}
	d.frozen = 0
	if err := d.primary.start(ctx); err != nil {
		return fmt.Errorf("crash: restart: %w", err)
	}
	d.front.point(d.primary.addr())
	return nil
}

func (d *deployment) close() {
	if d.front != nil {
		d.front.close()
	}
	for _, c := range []*cluster{d.primary, d.standby} {
		if c != nil {
			c.destroy()
		}
	}
	d.primary, d.standby = nil, nil
}

func (c *cluster) addr() string { return fmt.Sprintf("127.0.0.1:%d", c.port) }

// connect opens an administrative connection straight to this server,
// around the front.
func (c *cluster) connect(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, c.connString())
	if err != nil {
		return nil, fmt.Errorf("connect to the server on port %d: %w", c.port, err)
	}
	return conn, nil
}
