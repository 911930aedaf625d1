package worker

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/internal/drivertest"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
)

// spawnDriver installs the Go driver registered as name and starts a
// worker for it. The worker is this test binary re-executed, and finds
// the driver in drivertest's init, as a user's test binary finds theirs.
func spawnDriver(t *testing.T, name string) (*sut.Instance, *Process) {
	t.Helper()
	srv, err := pgserver.Shared()
	if err != nil {
		t.Fatalf("PostgreSQL server: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inst, err := sut.InstallDriver(ctx, srv.ConnString(), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inst.Close)
	if err := inst.Reset(ctx, []string{"e1", "e2"}); err != nil {
		t.Fatal(err)
	}
	proc, err := Spawn(Spec{Name: "w1", ConnString: srv.ConnString(), Statements: inst.Statements, OpTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Kill() })
	return inst, proc
}

func TestGoDriverWorker(t *testing.T) {
	inst, proc := spawnDriver(t, drivertest.LeasedName)
	b, _ := json.Marshal(Spec{Statements: inst.Statements})
	if !strings.Contains(string(b), drivertest.LeasedName) || strings.Contains(string(b), `"SQL"`) {
		t.Fatalf("spec on the wire = %s: want the driver's name and no statements", b)
	}
	c := do(t, proc, Request{Op: "claim"})
	if !c.Found || c.Event != "e1" || c.Gen != 1 {
		t.Fatalf("claim = %+v; want e1 at generation 1", c)
	}
	if r := do(t, proc, Request{Op: "complete", ID: c.ID, Gen: c.Gen}); !r.Applied || r.Err != "" {
		t.Fatalf("complete = %+v; want applied", r)
	}
	// In a transaction the driver gets the pgx.Tx: a rolled-back claim
	// leaves e2 READY.
	if r := do(t, proc, Request{Op: "begin"}); r.Event != "e2" {
		t.Fatalf("begin = %+v; want e2", r)
	}
	do(t, proc, Request{Op: "rollback"})
	rows, err := inst.Driver().ReadState(context.Background(), inst.Conn)
	if err != nil || len(rows) != 2 || rows[0].Status != "SENT" || rows[1].Status != "READY" {
		t.Fatalf("state = %+v, %v; want e1 SENT, e2 READY", rows, err)
	}
}

// A bad driver's failure comes back as the protocol's (Protocol set, the
// connection kept), and the worker answers the next request.
func TestGoDriverWorkerBrokenPromises(t *testing.T) {
	for name, want := range map[string]string{
		drivertest.PanicClaimName: "Claim panicked",
		drivertest.EmptyIDName:    "empty ID",
		drivertest.NilRowName:     "nil row",
		drivertest.OverBatchName:  "more than batch=1",
	} {
		t.Run(name, func(t *testing.T) {
			_, proc := spawnDriver(t, name)
			for range 2 {
				r := do(t, proc, Request{Op: "claim"})
				if !r.Protocol || !strings.Contains(r.Err, want) {
					t.Fatalf("claim = %+v; want a protocol failure saying %q", r, want)
				}
			}
			if name == drivertest.PanicClaimName && !strings.Contains(do(t, proc, Request{Op: "claim"}).Err, "goroutine ") {
				t.Fatal("a panic's failure has no stack")
			}
		})
	}
}

func TestGoDriverWorkerPanicInComplete(t *testing.T) {
	_, proc := spawnDriver(t, drivertest.PanicCompleteName)
	c := do(t, proc, Request{Op: "claim"})
	r := do(t, proc, Request{Op: "complete", ID: c.ID, Gen: c.Gen})
	if !r.Protocol || !strings.Contains(r.Err, "Complete panicked") {
		t.Fatalf("complete = %+v; want a protocol failure naming Complete", r)
	}
}

func TestGoDriverWorkerUnregistered(t *testing.T) {
	srv, err := pgserver.Shared()
	if err != nil {
		t.Fatalf("PostgreSQL server: %v", err)
	}
	_, err = Spawn(Spec{Name: "w1", ConnString: srv.ConnString(), OpTimeout: 5 * time.Second,
		Statements: &sut.Statements{Schema: "public", GoDriver: "never-registered"}})
	if err == nil || !strings.Contains(err.Error(), `no Go driver registered as "never-registered"`) {
		t.Fatalf("Spawn of an unregistered driver: %v", err)
	}
}
