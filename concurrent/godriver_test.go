package concurrent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/internal/drivertest"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
)

// TestGoDriverIsLinearizable: the leased protocol as a Go driver, under
// concurrent workers, the fixture actor and every fault, through the same
// sut.Driver as the file (TestLeasedIsLinearizable).
func TestGoDriverIsLinearizable(t *testing.T) {
	srv, err := pgserver.Shared()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inst, err := sut.InstallDriver(ctx, srv.ConnString(), drivertest.LeasedName)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	r, err := NewRunner(srv, inst, quick(t, 4))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res := r.Run()
	if res.Failure != nil {
		t.Fatalf("failed in history %d: %s: %s\n%s", res.Failure.History, res.Failure.Rule, res.Failure.Detail,
			strings.Join(res.Failure.Ops, "\n"))
	}
	if res.Histories == 0 || res.Ops < res.Histories*100 {
		t.Fatalf("%d histories, %d operations: the run did not run", res.Histories, res.Ops)
	}
}
