package faults

import (
	"context"
	"fmt"
	"syscall"
)

// Pause stops a process (SIGSTOP), as a long GC pause or a stalled VM
// would; its connection and open transaction stay as they are. The undo
// continues it (SIGCONT).
type Pause struct{ Pid int }

func (Pause) Name() string { return "pause" }

func (f Pause) Inject(context.Context) (func(), error) {
	if err := syscall.Kill(f.Pid, syscall.SIGSTOP); err != nil {
		return nothing, fmt.Errorf("pause: %w", err)
	}
	return once(func() { syscall.Kill(f.Pid, syscall.SIGCONT) }), nil
}
