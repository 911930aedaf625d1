package bench

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/outboxlab/outboxlab/sut"
)

// CPU accounting for the concurrent figures. On two shared cores the rates
// swing with other work, while the CPU an operation costs holds still: it
// says where the driver's time goes beyond the statement. The counters are
// read just before and just after each history's concurrent part, on both
// sides, so resets, drains and process starts are no operation's.

// cpuSample is the CPU time so far of this process, of its child processes
// (the worker processes) and of the server's client backends.
type cpuSample struct{ self, children, server time.Duration }

func (a cpuSample) sub(b cpuSample) cpuSample {
	return cpuSample{a.self - b.self, a.children - b.children, a.server - b.server}
}

func (a cpuSample) add(b cpuSample) cpuSample {
	return cpuSample{a.self + b.self, a.children + b.children, a.server + b.server}
}

// cpuMeter reads cpuSamples. The children and the server's client
// backends are read from /proc/PID/task/TID/schedstat (nanoseconds on a
// CPU, per thread), which counts a live process as it runs; postmaster is
// 0 when the server is not a process of this machine (a container, another
// host), and the server's part is then 0.
type cpuMeter struct{ self, postmaster int }

func newCPUMeter(inst *sut.Instance) cpuMeter {
	m := cpuMeter{self: os.Getpid()}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var backend int
	if err := inst.Conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return m
	}
	if ppid, ok := parentOf(backend); ok {
		m.postmaster = ppid
	}
	return m
}

// read takes a sample. This process's own time is read after the walk of
// /proc at a window's start and before it at its end (start false), so
// that the walk is in no window.
func (m cpuMeter) read(start bool) cpuSample {
	var s cpuSample
	self := func() { s.self = selfUsage().CPU }
	if !start {
		self()
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		switch ppid, _ := parentOf(pid); {
		case ppid == m.self:
			s.children += onCPU(pid)
		case m.postmaster != 0 && ppid == m.postmaster && clientBackend(pid):
			s.server += onCPU(pid)
		}
	}
	if start {
		self()
	}
	return s
}

// clientBackend reports whether a server process serves a client
// connection ("postgres: USER DB 127.0.0.1(PORT) ..."): the background
// processes (checkpointer, WAL writer, autovacuum) work by the clock, and
// the side whose windows last longer would be charged more of them.
func clientBackend(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	s := string(b)
	return strings.Contains(s, "127.0.0.1(") || strings.Contains(s, "::1(") || strings.Contains(s, "[local]")
}

// parentOf is pid's parent, from /proc/PID/stat.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:]) // state, ppid, ...
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// onCPU is the time pid's threads have spent on a CPU.
func onCPU(pid int) time.Duration {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, _ := os.ReadDir(dir)
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			total += time.Duration(ns)
		}
	}
	return total
}

func perOpUS(d time.Duration, ops int) float64 {
	if ops == 0 {
		return 0
	}
	return round(float64(d) / float64(time.Microsecond) / float64(ops))
}
