package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxlab/outboxlab/sut"
	"github.com/outboxlab/outboxlab/worker"
)

// KillCycle is what a kill step and its respawn cost together, as the
// state machine pays them for a worker in a transaction: a worker spawned
// (from the warm stock of idle processes when one is ready) and connected,
// one claim, SIGKILL, the server told to end the backend, and the wait
// until it has, so that the dead worker's locks are gone.
func KillCycle(inst *sut.Instance) *Probe {
	return &Probe{
		Before: func(ctx context.Context) error { return inst.Reset(ctx, Events[:1]) },
		Run: func(ctx context.Context) error {
			p, err := worker.Spawn(worker.Spec{Name: "w1", ConnString: inst.ConnString, Statements: inst.Statements, OpTimeout: 2 * time.Second})
			if err != nil {
				return err
			}
			resp, err := p.Do(worker.Request{Op: "claim"})
			if err == nil && !resp.Found {
				err = fmt.Errorf("claim found nothing (%s)", resp.Err)
			}
			backend := p.Backend
			p.Kill()
			if err != nil {
				return fmt.Errorf("claim: %w", err)
			}
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := worker.TerminateBackend(ctx, inst.Conn, backend); err != nil {
				return fmt.Errorf("end backend: %w", err)
			}
			return worker.AwaitBackendGone(ctx, inst.Conn, backend)
		},
		Close: func() {},
	}
}
