package pgserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Topology is where a protocol's server runs (PROTOCOL-FORMAT.md, "Version
// 3"): each is a real deployment the harness builds from local binaries,
// with the server fault that deployment can suffer.
type Topology string

const (
	// Single is one server, as Start gives; its fault (Crash) loses no
	// acknowledged commit.
	Single Topology = "single"
	// AsyncCommit is one server with synchronous_commit=off; Crash rewinds
	// it to its last WAL write.
	AsyncCommit Topology = "async-commit"
	// AsyncStandby is a primary and an asynchronous streaming standby;
	// Failover rewinds to what the standby had received.
	AsyncStandby Topology = "async-standby"
	// SyncStandby is the same with a synchronous standby: Failover loses no
	// acknowledged commit, and a commit waiting on the standby is an
	// unknown outcome.
	SyncStandby Topology = "sync-standby"
	// PoolerTransaction is one server behind PgBouncer in transaction
	// mode with a pool smaller than the workers (pooler.go): a worker's
	// transactions run on whichever server connection is free. Its fault
	// is the server's restart, which PgBouncer outlives.
	PoolerTransaction Topology = "pooler-transaction"
	// PoolerSession is the same in session mode: a client keeps its
	// server connection, the control for PoolerTransaction.
	PoolerSession Topology = "pooler-session"
)

// Topologies lists every topology, Single first.
var Topologies = []Topology{Single, AsyncCommit, AsyncStandby, SyncStandby, PoolerTransaction, PoolerSession}

// ParseTopology reads a topology's name.
func ParseTopology(name string) (Topology, error) {
	names := make([]string, len(Topologies))
	for i, t := range Topologies {
		if name == string(t) {
			return t, nil
		}
		names[i] = string(t)
	}
	return "", fmt.Errorf("unknown topology %q: want one of %s", name, strings.Join(names, ", "))
}

// Rewinds reports whether the topology's fault may lose acknowledged
// commits (the model's rewind).
func (t Topology) Rewinds() bool { return t == AsyncCommit || t == AsyncStandby }

func (t Topology) hasStandby() bool { return t == AsyncStandby || t == SyncStandby }

// Pooler reports whether the topology puts a connection pooler between
// the workers and the server.
func (t Topology) Pooler() bool { return t.poolMode() != "" }

// poolMode is PgBouncer's pool_mode for a pooler topology, "" for others.
func (t Topology) poolMode() string {
	switch t {
	case PoolerTransaction:
		return "transaction"
	case PoolerSession:
		return "session"
	}
	return ""
}

// Fault names the server fault a deployment supports, so that the machine
// asks the server which one to inject rather than switching on topologies.
type Fault string

const (
	// FaultNone: a server the harness does not own.
	FaultNone Fault = ""
	// FaultRestart: Crash, an immediate stop and restart that loses no
	// acknowledged commit.
	FaultRestart Fault = "restart"
	// FaultCrash: MarkDurable marks the point a later Crash rewinds to at
	// worst.
	FaultCrash Fault = "crash"
	// FaultFailover: MarkDurable, Stall, then Failover.
	FaultFailover Fault = "failover"
)

// Fault is the server fault this server supports.
func (s *Server) Fault() Fault {
	switch {
	case s.deploy != nil && s.Topology == AsyncCommit:
		return FaultCrash
	case s.deploy != nil:
		return FaultFailover
	case s.cluster != nil:
		return FaultRestart
	}
	return FaultNone
}

// StartTopology starts a deployment. Single is exactly Start; the others
// need a server the harness owns and builds from local binaries.
func StartTopology(ctx context.Context, t Topology) (*Server, error) {
	if t == Single {
		return Start(ctx)
	}
	if _, err := ParseTopology(string(t)); err != nil {
		return nil, err
	}
	if _, ok := userConnString(); ok {
		return nil, fmt.Errorf("topology %s needs local PostgreSQL server binaries to build its own servers: "+
			"DATABASE_URL or a PG* variable names a server the harness does not own (unset them)", t)
	}
	bin, err := findBinaries()
	if err != nil {
		return nil, fmt.Errorf("topology %s needs local PostgreSQL server binaries (a Docker container will not do): %w", t, err)
	}
	return startTopology(ctx, t, bin)
}

func startTopology(ctx context.Context, t Topology, bin string) (*Server, error) {
	if mode := t.poolMode(); mode != "" {
		return startPooled(ctx, t, mode, bin)
	}
	d, err := startDeployment(ctx, t, bin)
	if err != nil {
		return nil, fmt.Errorf("start %s from %s: %w", t, bin, err)
	}
	s := &Server{Source: "local", Topology: t, connString: d.front.connString(), deploy: d}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, s.connString)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("connect to %s through its front: %w", t, err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(cctx, "SHOW server_version").Scan(&s.Version); err != nil {
		s.Close()
		return nil, fmt.Errorf("read server version: %w", err)
	}
	return s, nil
}

// MarkDurable makes every commit so far durable: a later Crash or Failover
// rewinds no further back than this. On Single and SyncStandby every
// acknowledged commit already is.
func (s *Server) MarkDurable(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.deploy == nil:
		return nil
	case s.Topology == AsyncCommit:
		return s.deploy.flushAndFreeze(ctx)
	default:
		return s.deploy.waitReplayed(ctx)
	}
}

// Stall stops replication to the standby: no WAL the primary writes from
// now on reaches it, while the primary goes on committing (under
// SyncStandby, its commits then wait). Failover ends the stall.
func (s *Server) Stall(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deploy == nil || !s.Topology.hasStandby() {
		return fmt.Errorf("stall: topology %s has no standby", s.Topology)
	}
	return s.deploy.stall(ctx)
}

// Failover kills every process of the primary, promotes the standby, moves
// the front to it (cutting every client connection) and rebuilds the old
// primary as the new standby, streaming, so that the next Stall and
// Failover work.
func (s *Server) Failover(ctx context.Context) (FailoverReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deploy == nil || !s.Topology.hasStandby() {
		return FailoverReport{}, fmt.Errorf("failover: topology %s has no standby", s.Topology)
	}
	return s.deploy.failover(ctx)
}

// FailoverReport says what a failover did and how long each phase took.
type FailoverReport struct {
	// Timeline is the new primary's timeline (pg_control_checkpoint()).
	Timeline int
	// LostWAL is how many bytes of WAL the old primary had flushed that the
	// standby had not received: 0 when the failover lost nothing, -1 when
	// the old primary could not be asked.
	LostWAL int64
	// Stalled is how long replication was stalled before the kill (0 when
	// Failover came without a Stall).
	Stalled time.Duration
	// Kill, Promote and Rebuild are the phases: every primary process dead;
	// the standby promoted and the front moved to it; the old primary
	// rebuilt as the new standby and streaming.
	Kill, Promote, Rebuild time.Duration
}

func (r FailoverReport) String() string {
	return fmt.Sprintf("timeline %d, lost %d bytes of WAL; stalled %v, kill %v, promote %v, rebuild %v",
		r.Timeline, r.LostWAL, r.Stalled.Round(time.Millisecond), r.Kill.Round(time.Millisecond),
		r.Promote.Round(time.Millisecond), r.Rebuild.Round(time.Millisecond))
}

var errNoStandby = errors.New("the deployment has no standby (a rebuild failed)")
