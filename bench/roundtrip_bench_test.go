package bench

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// roundTripVariant is one way for a Go client to send BEGIN; SELECT 1;
// ROLLBACK, three prepared round trips: open connects and returns the
// transaction.
type roundTripVariant struct {
	name string
	open func(tb testing.TB, connString string) func() error
}

var roundTripSQL = []string{"BEGIN", "SELECT 1", "ROLLBACK"}

var roundTripVariants = []roundTripVariant{
	// What claimRolledBack did: pgx.Conn.Exec under a context with a
	// deadline, made for each transaction.
	{"pgx-timeout-ctx", func(tb testing.TB, cs string) func() error {
		c := roundTripConn(tb, cs)
		return func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, sql := range roundTripSQL {
				if _, err := c.Exec(ctx, sql, pgx.QueryExecModeCacheStatement); err != nil {
					return err
				}
			}
			return nil
		}
	}},
	// The same without a Done channel: pgconn watches nothing.
	{"pgx-background", func(tb testing.TB, cs string) func() error {
		c := roundTripConn(tb, cs)
		return func() error {
			for _, sql := range roundTripSQL {
				if _, err := c.Exec(context.Background(), sql, pgx.QueryExecModeCacheStatement); err != nil {
					return err
				}
			}
			return nil
		}
	}},
	// pgconn's prepared statements read by a ResultReader, a deadline
	// on the socket once per transaction.
	{"pgconn-deadline", func(tb testing.TB, cs string) func() error {
		c := roundTripConn(tb, cs)
		pc := c.PgConn()
		names := []string{"rt_0", "rt_1", "rt_2"}
		for i, name := range names {
			if _, err := pc.Prepare(context.Background(), name, roundTripSQL[i], nil); err != nil {
				tb.Fatal(err)
			}
		}
		return func() error {
			if err := pc.Conn().SetDeadline(time.Now().Add(time.Minute)); err != nil {
				return err
			}
			for _, name := range names {
				rr := pc.ExecPrepared(context.Background(), name, nil, nil, nil)
				for rr.NextRow() {
				}
				if _, err := rr.Close(); err != nil {
					return err
				}
			}
			return nil
		}
	}},
	// wireTx on Go's own net.Conn, and on a rawConn: what the bench runs.
	{"wire-netconn", func(tb testing.TB, cs string) func() error { return roundTripWire(tb, roundTripConn(tb, cs)) }},
	{"wire", func(tb testing.TB, cs string) func() error {
		return roundTripWire(tb, roundTripRawConn(tb, cs, dialRaw))
	}},
}

func roundTripWire(tb testing.TB, c *pgx.Conn) func() error {
	w, err := openWireTx(context.Background(), c, roundTripSQL, []int{0, 0, 0}, "", 1)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(w.close)
	return func() error {
		n, err := w.run()
		if err == nil && n != 1 {
			tb.Fatalf("SELECT 1 gave %d rows", n)
		}
		return err
	}
}

func roundTripRawConn(tb testing.TB, connString string, dial pgconn.DialFunc) *pgx.Conn {
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.DialFunc = dial
	c, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func roundTripConn(tb testing.TB, connString string) *pgx.Conn {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, connString)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close(ctx) })
	return c
}

// BenchmarkRoundTrip times the transaction by each variant.
//
//	go test -run '^$' -bench 'RoundTrip$' -benchtime 3s ./bench/
func BenchmarkRoundTrip(b *testing.B) {
	srv := server(b)
	for _, v := range roundTripVariants {
		b.Run(v.name, func(b *testing.B) {
			tx := v.open(b, srv.ConnString())
			if err := tx(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if err := tx(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRoundTripAlternating times the same transaction by each
// variant and by pgbench -M prepared, in rounds of a second that
// alternate, and reports each one's median as a metric: on a shared
// machine only alternation gives every client the same load.
//
//	go test -run '^$' -bench RoundTripAlternating -benchtime 1x ./bench/
func BenchmarkRoundTripAlternating(b *testing.B) {
	srv := server(b)
	ctx := context.Background()
	txs := make([]func() error, len(roundTripVariants))
	for i, v := range roundTripVariants {
		txs[i] = v.open(b, srv.ConnString())
	}
	samples := make([][]time.Duration, len(roundTripVariants)+1)
	usage := make([]clientUsage, len(roundTripVariants)+1)
	const rounds = 6
	for b.Loop() {
		for range rounds {
			for i, tx := range txs {
				before := selfUsage()
				s, err := timeLoop(time.Second, tx)
				if err != nil {
					b.Fatal(err)
				}
				samples[i] = append(samples[i], s...)
				usage[i] = usage[i].plus(selfUsage().minus(before))
			}
			r, err := runPgbenchScript(ctx, srv.ConnString(), "public", "BEGIN;\nSELECT 1;\nROLLBACK;\n", time.Second)
			if err != nil {
				b.Fatal(err)
			}
			samples[len(txs)] = append(samples[len(txs)], r.latencies...)
			usage[len(txs)] = usage[len(txs)].plus(r.usage)
		}
	}
	for i, name := range append(names(roundTripVariants), "pgbench") {
		n := float64(len(samples[i]))
		b.ReportMetric(us(percentile(samples[i], 0.5)), name+"-p50-µs")
		b.ReportMetric(us(usage[i].CPU)/n, name+"-cpu-µs/tx")
		b.ReportMetric(float64(usage[i].Switches)/n, name+"-switches/tx")
	}
}

func names(vs []roundTripVariant) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.name)
	}
	return out
}
