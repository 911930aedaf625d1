package sut

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/driver"
	"github.com/outboxlab/outboxlab/internal/drivertest"
	"github.com/outboxlab/outboxlab/model"
)

func installDriver(t *testing.T, name string) *Instance {
	t.Helper()
	inst, err := InstallDriver(testContext(t), server(t).ConnString(), name)
	if err != nil {
		t.Fatalf("InstallDriver: %v", err)
	}
	t.Cleanup(inst.Close)
	return inst
}

// A Go driver runs through the same Driver as a file: reset, claim,
// complete, the fixtures and the state read.
func TestInstallDriverRunsLeased(t *testing.T) {
	inst := installDriver(t, drivertest.LeasedName)
	ctx, d := testContext(t), inst.Driver()
	if err := inst.Reset(ctx, []string{"e1", "e2"}); err != nil {
		t.Fatal(err)
	}
	if !inst.Statements.HasGen || inst.Statements.GoDriver != drivertest.LeasedName || len(inst.Statements.Stmts) != 0 {
		t.Fatalf("Statements = %+v: want the traits and the name, no statements", inst.Statements)
	}
	if !inst.Proto.Has(Age) || inst.Proto.Has(Renew) || inst.Proto.Has(Rescue) {
		t.Fatalf("Proto.Has: age %v renew %v rescue %v; want true false false", inst.Proto.Has(Age), inst.Proto.Has(Renew), inst.Proto.Has(Rescue))
	}
	if d.StatementCount(Claim) != 1 || d.StatementCount(Renew) != 0 {
		t.Fatalf("StatementCount claim %d renew %d; want 1 and 0", d.StatementCount(Claim), d.StatementCount(Renew))
	}
	c, err := d.Claim(ctx, inst.Conn, "w1")
	if err != nil || !c.Found || c.Event != "e1" || c.Gen != 1 {
		t.Fatalf("Claim = %+v, %v; want e1 at generation 1", c, err)
	}
	if err := d.Exec(ctx, inst.Conn, Expire, Args{ID: c.ID}); err != nil {
		t.Fatal(err)
	}
	again, err := d.Claim(ctx, inst.Conn, "w2")
	if err != nil || again.Event != "e1" || again.Gen != 2 {
		t.Fatalf("reclaim after Expire = %+v, %v; want e1 at generation 2", again, err)
	}
	if ok, err := d.Apply(ctx, inst.Conn, Complete, Args{ID: c.ID, Gen: c.Gen}); err != nil || ok {
		t.Fatalf("stale complete = %v, %v; want not applied", ok, err)
	}
	if ok, err := d.Apply(ctx, inst.Conn, Complete, Args{ID: again.ID, Gen: again.Gen}); err != nil || !ok {
		t.Fatalf("current complete = %v, %v; want applied", ok, err)
	}
	if _, err := d.Apply(ctx, inst.Conn, Renew, Args{ID: c.ID}); err == nil {
		t.Fatal("Renew of a driver without Renewer: no error")
	}
	rows, err := d.ReadState(ctx, inst.Conn)
	if err != nil || len(rows) != 2 || rows[0].Status != model.Sent || rows[0].Gen != 2 || rows[1].Status != model.Ready || !rows[1].Due {
		t.Fatalf("ReadState = %+v, %v; want e1 SENT at 2, e2 READY and due", rows, err)
	}
}

func TestInstallDriverUnregistered(t *testing.T) {
	_, err := InstallDriver(testContext(t), server(t).ConnString(), "never-registered")
	if err == nil || !strings.Contains(err.Error(), `no Go driver registered as "never-registered"`) {
		t.Fatalf("InstallDriver of an unknown name: %v", err)
	}
}

// Each broken promise is the protocol's own failure, a *ProtocolError
// that says what was wrong; a panic names the method and carries its
// stack.
func TestGoDriverBrokenPromises(t *testing.T) {
	inst := installDriver(t, drivertest.LeasedName)
	ctx := testContext(t)
	if err := inst.Reset(ctx, []string{"e1"}); err != nil {
		t.Fatal(err)
	}
	claim := func(d Driver) error { _, err := d.ClaimRows(ctx, inst.Conn, "w1"); return err }
	for _, tc := range []struct {
		name string
		bad  drivertest.Misbehaving
		call func(Driver) error
		want []string
	}{
		{"panic in Claim", drivertest.Misbehaving{PanicIn: "Claim"}, claim, []string{"Claim panicked", "breaks on purpose", "goroutine "}},
		{"panic in State", drivertest.Misbehaving{PanicIn: "State"}, func(d Driver) error { _, err := d.ReadState(ctx, inst.Conn); return err },
			[]string{"State panicked", "goroutine "}},
		{"panic in Complete", drivertest.Misbehaving{PanicIn: "Complete"},
			func(d Driver) error { _, err := d.Apply(ctx, inst.Conn, Complete, Args{ID: "1"}); return err }, []string{"Complete panicked"}},
		{"panic in Enqueue", drivertest.Misbehaving{PanicIn: "Enqueue"},
			func(d Driver) error { return d.Exec(ctx, inst.Conn, Enqueue, Args{EventID: "e9"}) }, []string{"Enqueue panicked"}},
		{"empty id", drivertest.Misbehaving{Claims: []*driver.Claimed{{EventID: "e1", Generation: 1}}}, claim, []string{"empty ID"}},
		{"empty event", drivertest.Misbehaving{Claims: []*driver.Claimed{{ID: "1", Generation: 1}}}, claim, []string{"empty EventID"}},
		{"ErrNoRows", drivertest.Misbehaving{ClaimErr: pgx.ErrNoRows}, claim, []string{"Claim returned pgx.ErrNoRows"}},
		{"nil row", drivertest.Misbehaving{Claims: []*driver.Claimed{nil}}, claim, []string{"nil row (element 0)"}},
		{"over batch", drivertest.Misbehaving{Claims: []*driver.Claimed{{ID: "1", EventID: "e1"}, {ID: "2", EventID: "e2"}}}, claim,
			[]string{"2 rows, more than batch=1"}},
		{"event twice", drivertest.Misbehaving{Batch: 2, Claims: []*driver.Claimed{{ID: "1", EventID: "e1"}, {ID: "1", EventID: "e1"}}}, claim,
			[]string{"event e1 twice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := *inst.Statements
			st.Batch = max(tc.bad.Batch, 1)
			err := tc.call(&goDriver{name: "bad", p: tc.bad, st: &st})
			if !IsProtocolError(err) {
				t.Fatalf("err = %v; want a *ProtocolError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v; want it to say %q", err, w)
				}
			}
		})
	}
	// The good driver on the same rows passes: the failures above are the
	// breakage's, not the data's.
	if err := claim(inst.Driver()); err != nil {
		t.Fatalf("the leased driver's claim: %v", err)
	}
}
