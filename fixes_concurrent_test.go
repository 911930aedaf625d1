package outboxlab

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/concurrent"
	"github.com/outboxlab/outboxlab/pgserver"
)

// TestFixesHoldConcurrently: every published fix (testdata/libraries/fixed)
// and every correct protocol (testdata/correct) passes the concurrent mode,
// real worker processes at once with faults, each history checked for
// linearizability. The state machine runs some sections whole (a claim, a
// rescue, a section whose fixtures touch another table: docs/races.md), so
// a fix could hold one step at a time and still race; this keeps a
// published fix from regressing to one the concurrent mode fails. A short
// budget here; OUTBOXLAB_FIXES_HISTORIES sets a long one (the nightly's).
// A session lease (lease=session) the concurrent mode does not run yet:
// it must refuse one (ErrSessionLease), not pass it unjudged.
func TestFixesHoldConcurrently(t *testing.T) {
	srv, err := pgserver.Shared()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/libraries/fixed/*.sql")
	correct, _ := filepath.Glob("testdata/correct/*.sql")
	files = append(files, correct...)
	if len(files) < 20 {
		t.Fatalf("found %d protocol files, want the fixed libraries and the correct protocols", len(files))
	}
	histories := fixesHistories(t)
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".sql")
		if strings.Contains(path, "fixed") {
			name = "fixed_" + name
		}
		t.Run(name, func(t *testing.T) {
			inst := install(t, path)
			cfg := concurrent.Default()
			cfg.Histories, cfg.Ops, cfg.Duration, cfg.Seed, cfg.HTMLDir = histories, 150, 30*time.Second, 11, t.TempDir()
			if inst.Proto.SessionLease {
				r, err := concurrent.NewRunner(srv, inst, cfg)
				if r != nil {
					r.Close()
				}
				if !errors.Is(err, concurrent.ErrSessionLease) {
					t.Errorf("--concurrent on a session lease: %v, want it refused (ErrSessionLease)", err)
				}
				return
			}
			if res := runLinearizable(t, srv, inst, cfg); res.Histories == 0 {
				t.Errorf("no history ran in %v", cfg.Duration)
			}
		})
	}
}

// fixesHistories is the budget per protocol: OUTBOXLAB_FIXES_HISTORIES
// when set; else 6 histories in the nightly tier, 2 in CI's (tier_test.go;
// the 30 files took 110 to 120 s of CI at 6, 56 s at 3, 46 s at 2), with
// or without -short.
func fixesHistories(t *testing.T) int {
	if s := os.Getenv("OUTBOXLAB_FIXES_HISTORIES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("OUTBOXLAB_FIXES_HISTORIES=%q: want a positive number", s)
		}
		return n
	}
	switch {
	case nightly():
		return 6
	}
	return 2
}
