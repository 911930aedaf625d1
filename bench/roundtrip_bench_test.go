package bench

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BenchmarkRoundTrip times one transaction of three round trips, BEGIN;
// SELECT 1; ROLLBACK, each prepared, from one connection, by the ways a Go
// client can send it: where the client's share of a fast claim goes.
//
//	go test -run '^$' -bench RoundTrip -benchtime 3s -count 3 ./bench/
func BenchmarkRoundTrip(b *testing.B) {
	srv := server(b)
	for _, v := range roundTripVariants {
		b.Run(v.name, func(b *testing.B) {
			c := roundTripConn(b, srv.ConnString())
			if err := v.tx(context.Background(), c); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if err := v.tx(context.Background(), c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type roundTripVariant struct {
	name string
	tx   func(ctx context.Context, c *pgx.Conn) error
}

var roundTripVariants = []roundTripVariant{
	// What claimRolledBack did: pgx.Conn.Exec under a context with a
	// deadline, made for each transaction.
	{"pgx-timeout-ctx", func(ctx context.Context, c *pgx.Conn) error {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		for _, sql := range []string{"BEGIN", "SELECT 1", "ROLLBACK"} {
			if _, err := c.Exec(ctx, sql, pgx.QueryExecModeCacheStatement); err != nil {
				return err
			}
		}
		return nil
	}},
	// The same without a Done channel: pgconn watches nothing.
	{"pgx-background", func(_ context.Context, c *pgx.Conn) error {
		for _, sql := range []string{"BEGIN", "SELECT 1", "ROLLBACK"} {
			if _, err := c.Exec(context.Background(), sql, pgx.QueryExecModeCacheStatement); err != nil {
				return err
			}
		}
		return nil
	}},
	// pgconn's prepared statements read by a ResultReader, a deadline
	// on the socket once per transaction: what the bench now does.
	{"pgconn-deadline", func(_ context.Context, c *pgx.Conn) error {
		pc := c.PgConn()
		if err := pc.Conn().SetDeadline(time.Now().Add(time.Minute)); err != nil {
			return err
		}
		for _, name := range []string{"rt_begin", "rt_select", "rt_rollback"} {
			rr := pc.ExecPrepared(context.Background(), name, nil, nil, nil)
			for rr.NextRow() {
			}
			if _, err := rr.Close(); err != nil {
				return err
			}
		}
		return nil
	}},
}

// roundTripConn is a connection with the three statements prepared.
func roundTripConn(tb testing.TB, connString string) *pgx.Conn {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, connString)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close(ctx) })
	for name, sql := range map[string]string{"rt_begin": "BEGIN", "rt_select": "SELECT 1", "rt_rollback": "ROLLBACK"} {
		if _, err := c.PgConn().Prepare(ctx, name, sql, nil); err != nil {
			tb.Fatal(err)
		}
	}
	return c
}

// BenchmarkRoundTripAlternating times the same transaction by each
// variant and by pgbench -M prepared, in rounds of a second that
// alternate, and reports each one's median as a metric: on a shared
// machine only alternation gives both clients the same load.
//
//	go test -run '^$' -bench RoundTripAlternating -benchtime 1x ./bench/
func BenchmarkRoundTripAlternating(b *testing.B) {
	srv := server(b)
	ctx := context.Background()
	conns := make([]*pgx.Conn, len(roundTripVariants))
	for i := range conns {
		conns[i] = roundTripConn(b, srv.ConnString())
	}
	samples := make([][]time.Duration, len(roundTripVariants)+1)
	const rounds = 6
	for b.Loop() {
		for range rounds {
			for i, v := range roundTripVariants {
				for start := time.Now(); time.Since(start) < time.Second; {
					t0 := time.Now()
					if err := v.tx(ctx, conns[i]); err != nil {
						b.Fatal(err)
					}
					samples[i] = append(samples[i], time.Since(t0))
				}
			}
			r, err := runPgbenchScript(ctx, srv.ConnString(), "public", "BEGIN;\nSELECT 1;\nROLLBACK;\n", time.Second)
			if err != nil {
				b.Fatal(err)
			}
			samples[len(roundTripVariants)] = append(samples[len(roundTripVariants)], r.latencies...)
		}
	}
	for i, v := range roundTripVariants {
		b.ReportMetric(us(percentile(samples[i], 0.5)), v.name+"-p50-µs")
	}
	b.ReportMetric(us(percentile(samples[len(roundTripVariants)], 0.5)), "pgbench-p50-µs")
}
