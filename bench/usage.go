package bench

import (
	"os"
	"syscall"
	"time"
)

// clientUsage is what a client spent of the machine: CPU time, user and
// system, and context switches, voluntary (it slept waiting for the
// server) and not. On a machine of two cores the client's CPU is taken
// from the server's backend, so it is part of the client's overhead even
// where it does not lie on the path of a round trip.
type clientUsage struct {
	CPU      time.Duration
	Switches int64
}

func (u clientUsage) minus(o clientUsage) clientUsage {
	return clientUsage{CPU: u.CPU - o.CPU, Switches: u.Switches - o.Switches}
}

func (u clientUsage) plus(o clientUsage) clientUsage {
	return clientUsage{CPU: u.CPU + o.CPU, Switches: u.Switches + o.Switches}
}

func usageFrom(ru *syscall.Rusage) clientUsage {
	return clientUsage{CPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), Switches: ru.Nvcsw + ru.Nivcsw}
}

// selfUsage is this process's, all its threads.
func selfUsage() clientUsage {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return clientUsage{}
	}
	return usageFrom(&ru)
}

// usageOf is an exited child's.
func usageOf(ps *os.ProcessState) clientUsage {
	if ps == nil {
		return clientUsage{}
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return clientUsage{}
	}
	return usageFrom(ru)
}
