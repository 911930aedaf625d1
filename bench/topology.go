package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/pgserver"
)

// The server faults of format v3's rewinding topologies, each timed as one
// cycle on a deployment of its own, as a check that injected it would pay:
// the pgserver benchmarks BenchmarkFailoverCycle and BenchmarkCrashCycle
// time the same cycles.

// FailoverCycle is one async-standby fault on srv: a commit, MarkDurable
// (the standby has replayed it), Stall, a commit the failover must lose,
// Failover (every primary process killed, the standby promoted and the
// front moved to it, the old primary rebuilt as the new standby and
// streaming) and a new connection through the front, whose first statement
// finds the first commit kept and the second gone.
func FailoverCycle(srv *pgserver.Server) *Probe {
	stall := func(ctx context.Context) error {
		if err := srv.MarkDurable(ctx); err != nil {
			return err
		}
		return srv.Stall(ctx)
	}
	return rewindCycle(srv, stall, func(ctx context.Context) error {
		_, err := srv.Failover(ctx)
		return err
	})
}

// CrashCycle is one async-commit fault on srv: a commit, MarkDurable, a
// commit the crash must lose, Crash (every server process killed, crash
// recovery, the server up again behind the front) and a new connection
// through the front, whose first statement finds the first commit kept
// and the second gone.
func CrashCycle(srv *pgserver.Server) *Probe {
	return rewindCycle(srv, srv.MarkDurable, srv.Crash)
}

// rewindCycle is a cycle of mark (what bounds the rewind) and fault (the
// rewind), on a table of its own; a cycle whose fault kept the commit made
// after mark is an error: it measured no rewind.
func rewindCycle(srv *pgserver.Server, mark, fault func(context.Context) error) *Probe {
	var conn *pgx.Conn
	cycle := 0
	connect := func(ctx context.Context) error {
		var err error
		if conn, err = connectFront(ctx, srv); err != nil {
			return err
		}
		_, err = conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS outboxlab_bench_rewind (cycle int)")
		return err
	}
	return &Probe{
		Before: func(ctx context.Context) error {
			if conn == nil {
				return connect(ctx)
			}
			return nil
		},
		Run: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			cycle++
			if _, err := conn.Exec(ctx, "INSERT INTO outboxlab_bench_rewind VALUES ($1)", -cycle); err != nil {
				return fmt.Errorf("commit before the fault: %w", err)
			}
			if err := mark(ctx); err != nil {
				return err
			}
			if _, err := conn.Exec(ctx, "INSERT INTO outboxlab_bench_rewind VALUES ($1)", cycle); err != nil {
				return fmt.Errorf("commit to lose: %w", err)
			}
			if err := fault(ctx); err != nil {
				return err
			}
			conn.Close(context.Background())
			if err := connect(ctx); err != nil {
				return fmt.Errorf("reconnect: %w", err)
			}
			var kept, lost int
			if err := conn.QueryRow(ctx, "SELECT count(*) FILTER (WHERE cycle = -$1::int), count(*) FILTER (WHERE cycle = $1::int) FROM outboxlab_bench_rewind",
				cycle).Scan(&kept, &lost); err != nil {
				return fmt.Errorf("after the fault: %w", err)
			}
			if kept != 1 || lost != 0 {
				return fmt.Errorf("after the fault the commit before it is there %d times and the one after %d times, want 1 and 0", kept, lost)
			}
			return nil
		},
		Close: func() {
			if conn == nil {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn.Exec(ctx, "DROP TABLE IF EXISTS outboxlab_bench_rewind")
			conn.Close(ctx)
		},
	}
}

func connectFront(ctx context.Context, srv *pgserver.Server) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return pgx.Connect(ctx, srv.ConnString())
}

// topologyCycle starts the topology, takes the median of n cycles of the
// probe on it and stops it.
func topologyCycle(ctx context.Context, topo pgserver.Topology, n int, cycle func(*pgserver.Server) *Probe) (time.Duration, error) {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	srv, err := pgserver.StartTopology(sctx, topo)
	cancel()
	if err != nil {
		return 0, err
	}
	defer srv.Close()
	p := cycle(srv)
	defer p.Close()
	return p.Median(ctx, n)
}
