package bench

import (
	"bufio"
	"os"
	"runtime"
	"strings"

	"github.com/outboxlab/outboxlab/pgserver"
)

// Machine says where the figures were taken.
type Machine struct {
	CPUs     int    `json:"cpus"`
	CPU      string `json:"cpu"`
	OS       string `json:"os"`
	Go       string `json:"go"`
	Postgres string `json:"postgres"`
	Server   string `json:"server"` // local, env or docker (pgserver.Server.Source)
	// Load is the 1-minute load average when the run began: other work on
	// the machine is the main source of noise in the figures.
	Load string `json:"load"`
	// Worker is the executable a protocol file's worker processes run:
	// outboxlab-worker, or the harness's own binary (worker/executable.go).
	Worker string `json:"worker"`
}

// Host describes this machine and the server.
func Host(srv *pgserver.Server) Machine {
	return Machine{
		CPUs:     runtime.NumCPU(),
		CPU:      field("/proc/cpuinfo", "model name", ":"),
		OS:       strings.Trim(field("/etc/os-release", "PRETTY_NAME", "="), `"`),
		Go:       runtime.Version(),
		Postgres: srv.Version,
		Server:   srv.Source,
		Load:     loadAverage(),
	}
}

// field is the value of the first "key SEP value" line of a file, or
// "unknown".
func field(path, key, sep string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), sep)
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b) + " unknown")[0]
}
