package worker

import (
	"fmt"
	"time"
)

// StartCPU is the CPU one Go worker process for spec costs from its exec
// to its first answer: a process of the executable Spawn would run for
// spec (executable.go) is started outside the warm stock, sent its init
// (it connects and prepares), and SIGKILLed as soon as it has answered;
// the kernel's account of the exited process (user plus system time, what
// perf stat's task-clock counts) is the figure. The executable is named
// too, so that a figure says which binary it is of.
func StartCPU(spec Spec) (cpu time.Duration, exe string, err error) {
	spec = spec.withDefaults()
	if exe, err = executableFor(spec); err != nil {
		return 0, "", err
	}
	c, err := startGo(exe)
	if err != nil {
		return 0, exe, err
	}
	if _, err := initGo(c, spec); err != nil {
		return 0, exe, err
	}
	c.Kill(true)
	st := c.State()
	if st == nil {
		return 0, exe, fmt.Errorf("worker %s: no exit status after its kill", spec.Name)
	}
	return st.UserTime() + st.SystemTime(), exe, nil
}
