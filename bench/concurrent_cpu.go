package bench

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/outboxlab/outboxlab/sut"
)

// CPU accounting for the concurrent figures. On two shared cores the rates
// swing with other work, while the CPU an operation costs does not: it is
// what says where the driver's time goes beyond the statement (a raw
// operation and a driver's run the same statements, so the server's part
// should match, and the rest is the driver's).

// cpuTime is the CPU time of this process and that of its children reaped
// so far (the worker processes, once a runner's Close has killed them).
func cpuTime() (self, children time.Duration) {
	var s, c syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &s)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &c)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(s.Utime) + tv(s.Stime), tv(c.Utime) + tv(c.Stime)
}

func selfTime() time.Duration {
	self, _ := cpuTime()
	return self
}

func perOpUS(d time.Duration, ops int) float64 {
	if ops == 0 {
		return 0
	}
	return round(float64(d) / float64(time.Microsecond) / float64(ops))
}

// serverCPU reads the CPU time of a local server: its postmaster's
// children, live and reaped. ok is false when the server is not on this
// machine's /proc (a container, another host): the figure is then left out.
type serverCPU struct {
	postmaster int
	tick       time.Duration
}

func newServerCPU(inst *sut.Instance) (serverCPU, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var backend int
	if err := inst.Conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return serverCPU{}, false
	}
	st, ok := procStat(backend)
	if !ok || len(st) < 2 {
		return serverCPU{}, false
	}
	pm, err := strconv.Atoi(st[1]) // ppid: the postmaster
	if err != nil {
		return serverCPU{}, false
	}
	// USER_HZ is 100 on every Linux this runs on.
	return serverCPU{postmaster: pm, tick: 10 * time.Millisecond}, true
}

// now is the server's CPU time so far: the postmaster's, its reaped
// children's, and every live child's.
func (s serverCPU) now() time.Duration {
	st, ok := procStat(s.postmaster)
	if !ok {
		return 0
	}
	total := ticks(st, 11) + ticks(st, 12) + ticks(st, 13) + ticks(st, 14)
	entries, _ := os.ReadDir("/proc")
	pm := strconv.Itoa(s.postmaster)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if c, ok := procStat(pid); ok && len(c) > 12 && c[1] == pm {
			total += ticks(c, 11) + ticks(c, 12)
		}
	}
	return time.Duration(total) * s.tick
}

// procStat is /proc/PID/stat's fields after the command name: state is
// field 0, ppid 1, utime 11, stime 12, cutime 13, cstime 14.
func procStat(pid int) ([]string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(s[i+1:]), true
}

func ticks(fields []string, i int) int64 {
	if i >= len(fields) {
		return 0
	}
	n, _ := strconv.ParseInt(fields[i], 10, 64)
	return n
}
