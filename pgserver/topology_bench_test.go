package pgserver

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BenchmarkFailoverCycle times one async-standby fault, from a commit
// through Stall, a commit the failover loses, Failover (kill, promote,
// rebuild) and a new connection through the front that reaches the new
// primary.
//
//	go test -run '^$' -bench FailoverCycle -benchtime 10x ./pgserver/
func BenchmarkFailoverCycle(b *testing.B) {
	srv := startTestTopology(b, AsyncStandby)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	conn := connectFront(b, srv)
	mustExecB(b, conn, "CREATE TABLE bench_probe (v int)")
	var promote, rebuild time.Duration
	n := 0
	start := time.Now()
	for b.Loop() {
		insertEach(b, conn, "bench_probe", 1)
		if err := srv.Stall(ctx); err != nil {
			b.Fatal(err)
		}
		insertEach(b, conn, "bench_probe", 2)
		rep, err := srv.Failover(ctx)
		if err != nil {
			b.Fatal(err)
		}
		promote += rep.Promote
		rebuild += rep.Rebuild
		conn.Close(ctx)
		conn = connectFront(b, srv)
		mustExecB(b, conn, "SELECT 1")
		n++
	}
	b.ReportMetric(ms(time.Since(start), n), "ms/cycle")
	b.ReportMetric(ms(promote, n), "promote-ms")
	b.ReportMetric(ms(rebuild, n), "rebuild-ms")
}

// BenchmarkCrashCycle times one async-commit fault: a commit, MarkDurable,
// a commit the crash loses, Crash (kill and restart with crash recovery)
// and a new connection through the front.
//
//	go test -run '^$' -bench CrashCycle -benchtime 10x ./pgserver/
func BenchmarkCrashCycle(b *testing.B) {
	srv := startTestTopology(b, AsyncCommit)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	conn := connectFront(b, srv)
	mustExecB(b, conn, "CREATE TABLE bench_probe (v int)")
	n := 0
	start := time.Now()
	for b.Loop() {
		insertEach(b, conn, "bench_probe", 1)
		if err := srv.MarkDurable(ctx); err != nil {
			b.Fatal(err)
		}
		insertEach(b, conn, "bench_probe", 2)
		if err := srv.Crash(ctx); err != nil {
			b.Fatal(err)
		}
		conn.Close(ctx)
		conn = connectFront(b, srv)
		mustExecB(b, conn, "SELECT 1")
		n++
	}
	b.ReportMetric(ms(time.Since(start), n), "ms/cycle")
}

func ms(d time.Duration, n int) float64 { return float64(d.Microseconds()) / 1000 / float64(max(n, 1)) }

func mustExecB(b *testing.B, conn *pgx.Conn, sql string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, sql); err != nil {
		b.Fatalf("%s: %v", sql, err)
	}
}

// BenchmarkStallCycle times what the machine does at the start of every
// check on async-standby: Resume (the last check's stall ends), a commit
// (its reset), MarkDurable (the standby has replayed it) and Stall.
//
//	go test -run '^$' -bench StallCycle -benchtime 50x ./pgserver/
func BenchmarkStallCycle(b *testing.B) {
	srv := startTestTopology(b, AsyncStandby)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	conn := connectFront(b, srv)
	mustExecB(b, conn, "CREATE TABLE bench_probe (v int)")
	var durable, stall time.Duration
	n := 0
	start := time.Now()
	for b.Loop() {
		if err := srv.Resume(); err != nil {
			b.Fatal(err)
		}
		insertEach(b, conn, "bench_probe", 1)
		t0 := time.Now()
		if err := srv.MarkDurable(ctx); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := srv.Stall(ctx); err != nil {
			b.Fatal(err)
		}
		durable += t1.Sub(t0)
		stall += time.Since(t1)
		n++
	}
	b.ReportMetric(ms(time.Since(start), n), "ms/cycle")
	b.ReportMetric(ms(durable, n), "durable-ms")
	b.ReportMetric(ms(stall, n), "stall-ms")
}
