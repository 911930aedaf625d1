package bench

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
)

func TestMain(m *testing.M) {
	os.Exit(func() int {
		defer pgserver.CloseShared()
		return m.Run()
	}())
}

const partialIndexFile = "../testdata/backlog/leased_partial_index.sql"

// quickBacklog measures at the test's sizes for a moment: the figures
// are there, none is judged (no timing asserts).
func quickBacklog() BacklogOptions {
	return BacklogOptions{Sizes: []int{1_000, 10_000}, For: 50 * time.Millisecond, MinClaims: 3, Connections: []int{1, 4}}
}

func server(t testing.TB) *pgserver.Server {
	t.Helper()
	srv, err := pgserver.Shared()
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func resolve(t testing.TB, arg string) *sut.Protocol {
	t.Helper()
	p, err := sut.Resolve(arg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBacklogVerdict: the verdict is read from the plan, which at these
// sizes is deterministic. leased's claim walks its primary key and filters
// every SENT row ahead of the first eligible one: flagged at every size,
// with the partial index that testdata/backlog/leased_partial_index.sql
// adds suggested. That variant (the "mutant" the rule must not flag) is
// flat: its claim throws away no more than the unsent rows. River's
// adapted table shows the other way to read the history: a Seq Scan.
func TestBacklogVerdict(t *testing.T) {
	srv := server(t)
	before := ourSchemas(t, srv)
	protocols := []*sut.Protocol{resolve(t, "leased"), resolve(t, partialIndexFile), resolve(t, "../testdata/libraries/river.sql")}
	got, err := RunBacklog(context.Background(), srv, protocols, quickBacklog(), testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	leased, partial, river := got.Protocols[0], got.Protocols[1], got.Protocols[2]
	for _, s := range leased.Sizes {
		if !s.Plan.ReadsSent || s.Plan.Removed < s.Mix[classSent] {
			t.Errorf("leased at %d: reads_sent %v, %d rows removed, want flagged with every one of the %d SENT rows removed\n%s",
				s.Events, s.Plan.ReadsSent, s.Plan.Removed, s.Mix[classSent], s.Plan.Text)
		}
	}
	const want = "CREATE INDEX ON outbox_lab (id) WHERE status IN ('READY', 'INPROGRESS')"
	if leased.SuggestedIndex != want || !strings.Contains(leased.Verdict, "grows with the table") {
		t.Errorf("leased: verdict %q, suggested index %q, want growth and %q", leased.Verdict, leased.SuggestedIndex, want)
	}
	if !strings.Contains(readFile(t, partialIndexFile), "ON outbox_lab (id)\n    WHERE status IN ('READY', 'INPROGRESS')") {
		t.Errorf("%s no longer holds the index the verdict suggests", partialIndexFile)
	}
	for _, s := range partial.Sizes {
		if s.Plan.ReadsSent || s.Plan.Removed > s.Mix.NotSent() || s.Plan.Scan.Index != "outbox_lab_eligible" {
			t.Errorf("partial index at %d: reads_sent %v, %d rows removed by %s, want flat on outbox_lab_eligible\n%s",
				s.Events, s.Plan.ReadsSent, s.Plan.Removed, s.Plan.KeyLine, s.Plan.Text)
		}
	}
	if partial.SuggestedIndex != "" || !strings.HasPrefix(partial.Verdict, "flat") {
		t.Errorf("partial index: verdict %q, suggested %q, want flat and no suggestion", partial.Verdict, partial.SuggestedIndex)
	}
	// River's table as the library file adapts it has no fetch index: a
	// sequential scan and a sort, and the index is built from the sort key.
	const wantRiver = "CREATE INDEX ON river_job (priority, scheduled_at, id) WHERE state = 'available' AND queue = 'default'"
	if last := river.Sizes[1].Plan; !river.ReadsSent || last.Scan.NodeType != "Seq Scan" || river.SuggestedIndex != wantRiver {
		t.Errorf("river: reads_sent %v, %s, suggested %q, want a flagged Seq Scan and %q", river.ReadsSent, last.KeyLine, river.SuggestedIndex, wantRiver)
	}
	for _, p := range got.Protocols {
		checkFigures(t, p)
	}
	checkSchemasGone(t, srv, before)
}

// checkFigures: every size has its mix, both latencies and a plan; growth
// is a ratio of two measured medians.
func checkFigures(t *testing.T, p ProtocolBacklog) {
	t.Helper()
	if len(p.Sizes) != 2 || !(p.Growth > 0) {
		t.Fatalf("%s: %d sizes, growth %v", p.Protocol, len(p.Sizes), p.Growth)
	}
	for _, s := range p.Sizes {
		if err := verifyMix(s.Mix, expectedMix(s.Events)); err != nil {
			t.Errorf("%s at %d: %v", p.Protocol, s.Events, err)
		}
		if len(s.Latency) != 2 || s.Latency[0].Connections != 1 || s.Latency[1].Connections != 4 {
			t.Fatalf("%s at %d: latencies %+v, want from 1 and 4 connections", p.Protocol, s.Events, s.Latency)
		}
		for _, l := range s.Latency {
			if l.Claims < 3 || !(l.P50US > 0) || l.P99US < l.P50US || !(l.ClaimsPerS > 0) {
				t.Errorf("%s at %d: %+v", p.Protocol, s.Events, l)
			}
		}
		if !strings.Contains(s.Plan.Text, "Buffers:") || !strings.Contains(s.Plan.Text, "actual time") {
			t.Errorf("%s at %d: the plan is not EXPLAIN (ANALYZE, BUFFERS):\n%s", p.Protocol, s.Events, s.Plan.Text)
		}
	}
}

// TestMixReadsBack: each known table's mix, read back through its
// protocol's own state query, is the mix meant. A mixer that gets a
// protocol wrong is caught: the mutant gives leased's waiting rows a
// backoff that is already over, so they read as READY and due.
func TestMixReadsBack(t *testing.T) {
	srv := server(t)
	const n = 1_000
	for _, arg := range []string{"leased", "../testdata/libraries/oban.sql", "../testdata/libraries/river.sql", "../testdata/libraries/pgmq.sql"} {
		inst, m := loadMixed(t, srv, arg, n, nil)
		got, err := readMix(context.Background(), inst)
		if err == nil {
			err = verifyMix(got, expectedMix(n))
		}
		if err != nil {
			t.Errorf("%s: %v", arg, err)
		}
		if m.table == "outbox_lab" {
			inst.Close()
			mutant := m
			mutant.sql = []string{strings.Replace(m.sql[0], "WHEN 'waiting' THEN statement_timestamp() + interval", "WHEN 'waiting' THEN statement_timestamp() - interval", 1)}
			if mutant.sql[0] == m.sql[0] {
				t.Fatal("the mutant changed nothing")
			}
			inst, _ = loadMixed(t, srv, arg, n, &mutant)
			got, err := readMix(context.Background(), inst)
			if err == nil {
				err = verifyMix(got, expectedMix(n))
			}
			if err == nil || !strings.Contains(err.Error(), "ready") {
				t.Errorf("mutant waiting_due: verifyMix = %v, want the ready count wrong", err)
			}
		}
		inst.Close()
	}
}

// loadMixed installs a protocol, loads n events and applies its mixer
// (or the one given).
func loadMixed(t testing.TB, srv *pgserver.Server, arg string, n int, use *mixer) (*sut.Instance, mixer) {
	t.Helper()
	ctx := context.Background()
	inst, err := install(ctx, srv, resolve(t, arg))
	if err != nil {
		t.Fatal(err)
	}
	tables, err := schemaTables(ctx, inst)
	if err != nil {
		t.Fatal(err)
	}
	m, err := mixerFor(tables)
	if err != nil {
		t.Fatal(err)
	}
	if use != nil {
		m = *use
	}
	if err := load(ctx, inst, n); err != nil {
		t.Fatal(err)
	}
	if err := m.apply(ctx, inst.Conn, n); err != nil {
		t.Fatal(err)
	}
	return inst, m
}

// TestBacklogCancelledLeavesNothing: a run cut short (here by its
// deadline, as by an interrupt) drops the schema it was working in.
func TestBacklogCancelledLeavesNothing(t *testing.T) {
	srv := server(t)
	before := ourSchemas(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	opt := quickBacklog()
	opt.Sizes, opt.For = []int{200_000}, time.Minute // loading alone takes longer
	_, err := RunBacklog(ctx, srv, []*sut.Protocol{resolve(t, "leased")}, opt, testWriter{t})
	if !errors.Is(err, context.DeadlineExceeded) && (err == nil || !strings.Contains(err.Error(), "context deadline")) {
		t.Fatalf("err = %v, want the deadline", err)
	}
	checkSchemasGone(t, srv, before)
}

// TestImmutablePredicate: the part of a filter a partial index may hold.
func TestImmutablePredicate(t *testing.T) {
	for _, c := range []struct{ filter, want string }{
		{"(((status = 'READY'::text) AND (next_attempt_at <= statement_timestamp())) OR ((status = 'INPROGRESS'::text) AND (lease_until <= statement_timestamp())))",
			"status IN ('READY', 'INPROGRESS')"},
		{"((o.state = 'available'::oban_job_state) AND (o.queue = 'default'::text) AND (o.scheduled_at <= now()))",
			"state = 'available' AND queue = 'default'"},
		{"(vt <= clock_timestamp())", ""},
		{"((status = 'READY'::text) OR (lease_until <= now()))", ""},
		{"((a = 'x'::text) OR (b = 'y'::text))", ""},
		{"(note = 'a OR b'::text)", "note = 'a OR b'"},
	} {
		if got := immutablePredicate(c.filter); got != c.want {
			t.Errorf("immutablePredicate(%q) = %q, want %q", c.filter, got, c.want)
		}
	}
}

// TestPgbenchScript: the claim's parameters become pgbench variables, the
// transaction rolls back.
func TestPgbenchScript(t *testing.T) {
	st := sut.Stmt{SQL: "SELECT 1", Params: nil, Prelude: nil}
	st.Prelude = []sut.Stmt{{SQL: "INSERT INTO w VALUES ($1::text)", Params: []string{"worker"}}}
	st.SQL, st.Params = "UPDATE t SET owner = $1 WHERE x = '$2'", []string{"worker"}
	want := "BEGIN;\nINSERT INTO w VALUES (:worker::text);\nUPDATE t SET owner = :worker WHERE x = '$2';\nROLLBACK;\n"
	if got := pgbenchScript(st); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

var ourSchema = regexp.MustCompile(`^outboxlab_[0-9a-f]+$`)

// ourSchemas lists the outboxlab schemas on the server now.
func ourSchemas(t *testing.T, srv *pgserver.Server) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT nspname FROM pg_namespace`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, n := range names {
		if ourSchema.MatchString(n) {
			out[n] = true
		}
	}
	return out
}

func checkSchemasGone(t *testing.T, srv *pgserver.Server, before map[string]bool) {
	t.Helper()
	for s := range ourSchemas(t, srv) {
		if !before[s] {
			t.Errorf("schema %s outlived the run", s)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// testWriter sends progress to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// A comparison with a pgbench run that finished no transaction has no
// ratio: 0, not the +Inf that JSON cannot encode.
func TestRatioOfNothing(t *testing.T) {
	if got := ratio(420, 0); got != 0 {
		t.Errorf("ratio(420, 0) = %v, want 0", got)
	}
	if got := ratio(3, 2); got != 1.5 {
		t.Errorf("ratio(3, 2) = %v, want 1.5", got)
	}
}
