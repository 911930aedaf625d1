package scenarios

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/internal/drivertest"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
)

// TestMain lets this test binary double as the worker process a scenario
// kills, and stops the binary's PostgreSQL server when the tests end.
func TestMain(m *testing.M) {
	worker.MainIfWorker()
	os.Exit(func() int {
		defer pgserver.CloseShared()
		return m.Run()
	}())
}

// The six scenarios run a Go driver through the same sut.Driver as a
// file: the leased driver passes all six, as the leased file does, and the
// driver whose complete skips the generation check fails the stale
// complete.
func TestScenariosOfGoDrivers(t *testing.T) {
	srv, err := pgserver.Shared()
	if err != nil {
		t.Fatalf("PostgreSQL server: %v", err)
	}
	for name, fails := range map[string]string{drivertest.LeasedName: "", drivertest.NoGenName: "stale_complete_rejected"} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			inst, err := sut.InstallDriver(ctx, srv.ConnString(), name)
			if err != nil {
				t.Fatal(err)
			}
			defer inst.Close()
			results := Run(ctx, inst)
			if len(results) != 6 {
				t.Fatalf("%d scenarios ran, want 6", len(results))
			}
			for _, r := range results {
				want := "pass"
				if r.Scenario == fails {
					want = "fail"
				}
				if r.Result != want {
					t.Errorf("%s: %s (%s), want %s", r.Scenario, r.Result, r.Detail, want)
				}
			}
		})
	}
}
