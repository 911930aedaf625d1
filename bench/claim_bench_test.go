package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/outboxlab/outboxlab/sut"
)

// pgxClaim is the claim loop as it was before wireTx: BEGIN, the claim's
// statements and ROLLBACK through pgx.Conn, prepared and cached, under a
// context with a deadline made for each claim. Kept to be measured
// against (BenchmarkClaimAlternating), not used by the bench.
func pgxClaim(ctx context.Context, conn *pgx.Conn, st sut.Stmt, worker string) (rows int, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := conn.Exec(ctx, "BEGIN", pgx.QueryExecModeCacheStatement); err != nil {
		return 0, err
	}
	rows, err = func() (int, error) {
		args := func(s sut.Stmt) []any {
			a := []any{pgx.QueryExecModeCacheStatement}
			for range s.Params {
				a = append(a, worker)
			}
			return a
		}
		for _, p := range st.Prelude {
			if _, err := conn.Exec(ctx, p.SQL, args(p)...); err != nil {
				return 0, err
			}
		}
		res, err := conn.Query(ctx, st.SQL, args(st)...)
		if err != nil {
			return 0, err
		}
		n := 0
		for res.Next() {
			n++
		}
		return n, res.Err()
	}()
	if _, rerr := conn.Exec(ctx, "ROLLBACK", pgx.QueryExecModeCacheStatement); err == nil {
		err = rerr
	}
	return rows, err
}

// BenchmarkClaimAlternating times the claim at a backlog of 10^3 by the
// old loop (pgx), the bench's (wireTx on a rawConn), wireTx on Go's own
// net.Conn, and pgbench, in rounds of a second whose order turns (ABCD,
// DCBA, BCDA, ADCB, ...), and
// reports each one's median and its ratio to pgbench's.
//
//	go test -run '^$' -bench ClaimAlternating -benchtime 1x ./bench/
func BenchmarkClaimAlternating(b *testing.B) {
	srv := server(b)
	for _, arg := range []string{partialIndexFile, "../testdata/libraries/oban.sql", "leased"} {
		b.Run(arg[max(0, len(arg)-24):], func(b *testing.B) {
			ctx := context.Background()
			inst, _ := loadMixed(b, srv, arg, 1_000, nil)
			defer inst.Close()
			tables, err := schemaTables(ctx, inst)
			if err == nil {
				err = vacuumAnalyze(ctx, inst, tables)
			}
			if err != nil {
				b.Fatal(err)
			}
			old, err := sut.Connect(ctx, inst.ConnString, inst.Statements.Schema)
			if err != nil {
				b.Fatal(err)
			}
			defer old.Close(ctx)
			wire, err := openClaimTx(ctx, inst, "b1")
			if err != nil {
				b.Fatal(err)
			}
			defer wire.close()
			wireNet, err := openClaimTxDialing(ctx, inst, "b1", nil)
			if err != nil {
				b.Fatal(err)
			}
			defer wireNet.close()
			st := inst.Statements.Stmts[sut.Claim]
			clients := []func(time.Duration) ([]time.Duration, error){
				func(d time.Duration) ([]time.Duration, error) {
					return timeLoop(d, func() error { _, err := pgxClaim(ctx, old, st, "b1"); return err })
				},
				func(d time.Duration) ([]time.Duration, error) {
					return timeLoop(d, func() error { _, err := wire.run(); return err })
				},
				func(d time.Duration) ([]time.Duration, error) {
					return timeLoop(d, func() error { _, err := wireNet.run(); return err })
				},
				func(d time.Duration) ([]time.Duration, error) {
					r, err := runPgbench(ctx, inst, d)
					return r.latencies, err
				},
			}
			names := []string{"pgx", "wire", "wire-netconn", "pgbench"}
			n := len(clients)
			samples := make([][]time.Duration, n)
			for _, c := range clients[:n-1] { // untimed: the first second after VACUUM is slower for all
				if _, err := c(time.Second / 2); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				for r := range 2 * n {
					for k := range n {
						i := (r/2 + k) % n // each client at each place twice,
						if r%2 == 1 {      // the second time in the reverse order
							i = (r/2 + n - 1 - k) % n
						}
						s, err := clients[i](time.Second)
						if err != nil {
							b.Fatal(fmt.Errorf("%s: %w", names[i], err))
						}
						samples[i] = append(samples[i], s...)
					}
				}
			}
			p50 := func(i int) float64 { return us(percentile(samples[i], 0.5)) }
			for i, n := range names {
				b.ReportMetric(p50(i), n+"-p50-µs")
			}
			for i, name := range names[:n-1] {
				b.ReportMetric(round(p50(i)/p50(n-1)), name+"/pgbench")
			}
		})
	}
}

func timeLoop(d time.Duration, f func() error) ([]time.Duration, error) {
	var out []time.Duration
	for start := time.Now(); time.Since(start) < d; {
		t0 := time.Now()
		if err := f(); err != nil {
			return out, err
		}
		out = append(out, time.Since(t0))
	}
	return out, nil
}

// BenchmarkClaim runs the claim at a backlog of 10^3 with the partial
// index by the old loop, the bench's and the bench's on Go's own net.Conn,
// one after the other, for a profile or the counts of any one:
//
//	go test -c -o bench.test ./bench/ && cd bench
//	perf stat -e task-clock,context-switches ../bench.test -test.run '^$' \
//	    -test.bench 'Claim$/^wire$' -test.benchtime 20000x
func BenchmarkClaim(b *testing.B) {
	srv := server(b)
	ctx := context.Background()
	inst, _ := loadMixed(b, srv, partialIndexFile, 1_000, nil)
	defer inst.Close()
	st := inst.Statements.Stmts[sut.Claim]
	b.Run("pgx", func(b *testing.B) {
		c, err := sut.Connect(ctx, inst.ConnString, inst.Statements.Schema)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close(ctx)
		for b.Loop() {
			if _, err := pgxClaim(ctx, c, st, "b1"); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, v := range []struct {
		name string
		dial pgconn.DialFunc
	}{{"wire", dialRaw}, {"wire-netconn", nil}} {
		b.Run(v.name, func(b *testing.B) {
			w, err := openClaimTxDialing(ctx, inst, "b1", v.dial)
			if err != nil {
				b.Fatal(err)
			}
			defer w.close()
			for b.Loop() {
				if _, err := w.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
