package outboxlab

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/outboxlab/outboxlab/faults"
	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/search"
	"github.com/outboxlab/outboxlab/sut"
)

// TestNetworkFaults pins what the model assumes of each network fault: a
// lost request never runs, a lost reply's statement commits, and the
// client cannot tell them apart (a connection error, not a server error).
func TestNetworkFaults(t *testing.T) {
	inst := install(t, "leased")
	srv, _ := pgserver.Shared()
	in, err := faults.New(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	for _, c := range []struct {
		fault  string
		inject func(string) (func(), error)
		want   model.Status // e1 after the faulted claim
	}{
		{"request_lost", in.LoseRequest, model.Ready},
		{"reply_lost", in.LoseReply, model.InProgress},
	} {
		t.Run(c.fault, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := inst.Reset(ctx, []string{"e1"}); err != nil {
				t.Fatal(err)
			}
			conn, err := sut.Connect(ctx, in.WorkerConnString("probe"), inst.Statements.Schema)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			claim := inst.Statements.Stmts[sut.Claim].SQL
			if _, err := conn.Prepare(ctx, claim, claim); err != nil { // one round trip from now on
				t.Fatal(err)
			}
			undo, err := c.inject("probe")
			if err != nil {
				t.Fatal(err)
			}
			defer undo()
			_, err = inst.Statements.Claim(ctx, conn, "probe")
			var pgErr *pgconn.PgError
			if err == nil || errors.As(err, &pgErr) {
				t.Fatalf("claim through %s: error %v, want a connection error", c.fault, err)
			}
			rows, err := inst.Statements.ReadState(ctx, inst.Conn)
			if err != nil {
				t.Fatal(err)
			}
			if rows[0].Status != c.want {
				t.Errorf("after the claim's %s e1 is %s, want %s", c.fault, rows[0].Status, c.want)
			}
		})
	}
}

// faultOnlyMutants are protocols that no fault-free interleaving can fault:
// only a crash or a broken connection shows what is wrong with them.
//
// Lost requests and lost replies alone cannot expose a protocol here: a
// section is one statement, so a lost request is a step that never ran (a
// commit's becomes a rollback, as on a kill), and a lost reply is a step
// whose result the worker then never uses, which a fault-free program can
// also do. They test the harness's handling of ambiguous outcomes. A
// restart is different: it is the only step that tests durability.
var faultOnlyMutants = []struct {
	file    string
	actions []string // what the run with faults draws
	rule    string   // the failure the faults must find
}{
	{"testdata/faults/unlogged_outbox.sql", []string{machine.ActClaim, machine.ActComplete, machine.ActDBRestart}, "rows are never deleted"},
}

// TestFaultOnlyMutants: each mutant passes the default budget without
// faults and fails with them.
func TestFaultOnlyMutants(t *testing.T) {
	if srv, err := pgserver.Shared(); err == nil && !srv.Owned() {
		t.Skip("these mutants need a server restart, and the harness does not own this server (DATABASE_URL or PG*)")
	}
	for _, m := range faultOnlyMutants {
		t.Run(strings.TrimSuffix(m.file[strings.LastIndex(m.file, "/")+1:], ".sql"), func(t *testing.T) {
			calm := machine.Default()
			calm.Faults = false
			h := harness(t, m.file, calm)
			tb := search.NewRecordingTB(t.Name() + "/calm")
			if !tb.RunCheck(h) {
				t.Fatalf("fails without faults, so it is no fault-only mutant: %s", firstLine(tb.Errors()))
			}
			h.Close()
			h.Inst.Close()

			// The faults' run draws few actions besides them, so that it
			// fails and shrinks quickly: a restart costs 0.1 s.
			cfg := machine.Default()
			cfg.Actions = m.actions
			h = harness(t, m.file, cfg)
			tb = search.NewRecordingTB(t.Name() + "/faults")
			if tb.RunCheck(h) {
				t.Fatal("passed with faults")
			}
			v := h.Failure()
			if v == nil {
				t.Fatalf("failed without a violation: %s", firstLine(tb.Errors()))
			}
			if !strings.HasPrefix(v.Rule, m.rule) {
				t.Errorf("violation %q, want %q", v.Rule, m.rule)
			}
			t.Logf("violation: %s\nprogram:\n%s", v.Detail, strings.Join(h.Program(), "\n"))
		})
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
