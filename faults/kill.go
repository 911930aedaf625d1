package faults

import (
	"context"
	"fmt"
	"syscall"
)

// Kill ends a process with SIGKILL: no clean-up, no goodbye to the server,
// which rolls its open transaction back once it notices the connection is
// gone. A killed process cannot be undone; whoever owns it respawns it.
type Kill struct{ Pid int }

func (Kill) Name() string { return "kill" }

func (f Kill) Inject(context.Context) (func(), error) {
	if err := syscall.Kill(f.Pid, syscall.SIGKILL); err != nil {
		return nothing, fmt.Errorf("kill: %w", err)
	}
	return nothing, nil
}
