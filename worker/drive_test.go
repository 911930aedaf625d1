package worker

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxlab/outboxlab/model"
	"github.com/outboxlab/outboxlab/pgserver"
	"github.com/outboxlab/outboxlab/sut"
)

// A worker process driving a history by itself, on a real server: its
// records outlive a SIGKILL, and a broken connection is a lost outcome
// only when a fault was marked.

func driving(t *testing.T) (*sut.Instance, *Board, *Process) {
	t.Helper()
	inst, idle := setup(t, v2Protocol)
	idle.Kill()
	b, err := NewBoard(1, 5, 4000)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	srv, _ := pgserver.Shared()
	p, err := Spawn(Spec{Name: "w1", ConnString: srv.ConnString(), Statements: inst.Statements, OpTimeout: 5 * time.Second, Board: b.Path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill() })
	return inst, b, p
}

func driveRequest() Request {
	return Request{Op: OpDrive, Drive: &DriveRequest{Seed: 1, Stream: 2}}
}

// checkRecords holds the records to their order: each called after the
// last returned, and only the last may be open.
func checkRecords(t *testing.T, recs []Record) {
	t.Helper()
	if len(recs) == 0 {
		t.Fatal("no records")
	}
	for i, r := range recs {
		if r.Open && i != len(recs)-1 {
			t.Errorf("record %d of %d is open", i, len(recs))
		}
		if !r.Open && r.Return < r.Call || i > 0 && r.Call < recs[i-1].Return {
			t.Errorf("record %d (%+v) out of order after %+v", i, r, recs[i-1])
		}
	}
}

func TestDriveRecordsOutliveKill(t *testing.T) {
	_, b, p := driving(t)
	b.Start(1000, MonoNow()+int64(20*time.Second))
	if err := p.send(driveRequest()); err != nil {
		t.Fatal(err)
	}
	// Until the drive has recorded ten operations, however loaded the
	// machine: a fixed 200 ms once saw 9 at a load of 11 (CI's run).
	for deadline := time.Now().Add(10 * time.Second); len(b.Slot(0).Records()) < 10; {
		if time.Now().After(deadline) {
			t.Fatalf("%d records in 10 s of driving", len(b.Slot(0).Records()))
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.Kill()
	recs := b.Slot(0).Records()
	checkRecords(t, recs)
	if len(recs) < 10 {
		t.Errorf("%d records after the kill, where the drive had written 10 or more", len(recs))
	}
}

func TestDriveSpendsTheBudget(t *testing.T) {
	_, b, p := driving(t)
	b.Start(50, MonoNow()+int64(20*time.Second))
	resp, err := p.Drive(driveRequest(), 20*time.Second, func(uint32, int64) { t.Error("asked to end a backend with no fault") })
	if err != nil || resp.Err != "" || resp.Drive != nil {
		t.Fatalf("drive = %+v, %v", resp, err)
	}
	recs := b.Slot(0).Records()
	checkRecords(t, recs)
	begins, ends := 0, 0
	for _, r := range recs {
		switch {
		case r.Open || r.Out == model.Unknown:
			t.Errorf("%+v with no fault", r)
		case r.Kind == model.Begin:
			begins++
		case r.Kind == model.Commit || r.Kind == model.Rollback:
			ends++
		}
	}
	if n := len(recs) - ends; n != 50 || begins != ends {
		t.Errorf("%d operations of a budget of 50, %d begins and %d ends", n, begins, ends)
	}
}

// A connection that breaks while a fault is armed is a lost outcome: the
// worker asks the parent to end its old backend, writes the outcome as
// unknown and goes on. With no fault marked, the same break is a failure.
func TestDriveBlamesABreakOnAFaultOnlyWhenMarked(t *testing.T) {
	for _, armed := range []bool{true, false} {
		inst, b, p := driving(t)
		b.Start(2000, MonoNow()+int64(20*time.Second))
		slot := b.Slot(0)
		slot.Arm(armed)
		var asked atomic.Uint32
		done := make(chan Response, 1)
		go func() {
			resp, err := p.Drive(driveRequest(), 30*time.Second, func(backend uint32, _ int64) {
				asked.Store(backend)
				slot.Arm(false)
			})
			if err != nil {
				t.Error(err)
			}
			done <- resp
		}()
		// Once the drive is under way, well before its budget is spent.
		for deadline := time.Now().Add(10 * time.Second); len(slot.Records()) < 20 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		backend := slot.Backend()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := TerminateBackend(ctx, inst.Conn, backend); err != nil {
			t.Fatal(err)
		}
		cancel()
		resp := <-done
		recs := slot.Records()
		if armed {
			if resp.Drive != nil || asked.Load() != backend {
				t.Errorf("armed: drive = %+v, asked to end %d, want %d", resp.Drive, asked.Load(), backend)
			}
			lost := 0
			for _, r := range recs {
				if r.Out == model.Unknown && r.Fault == "connection cut" {
					lost++
				}
			}
			if lost == 0 || recs[len(recs)-1].Backend == backend {
				t.Errorf("armed: %d lost outcomes, and the last record on backend %d (the old %d)", lost, recs[len(recs)-1].Backend, backend)
			}
			continue
		}
		if resp.Drive == nil || !strings.HasSuffix(resp.Drive.Rule, "lost its connection with no fault injected") || asked.Load() != 0 {
			t.Errorf("not armed: drive = %+v, asked to end %d", resp.Drive, asked.Load())
		}
		if !b.Stopped() {
			t.Error("not armed: the failure did not stop the history")
		}
		if rule, _, _ := slot.Failure(); resp.Drive != nil && rule != resp.Drive.Rule {
			t.Errorf("not armed: the board says %q, the answer %q", rule, resp.Drive.Rule)
		}
	}
}
