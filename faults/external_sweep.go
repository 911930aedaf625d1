package faults

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/outboxlab/outboxlab/internal/proc"
)

// A killed run never gets to delete its proxies on the external server,
// and they keep their ports of the range. So every proxy's name says which
// process made it, outboxlab_<machine>_<pid>_<run>_<worker>, where machine
// stands for this boot and PID namespace, and a new run deletes those made
// on its machine by a process that is gone (as pgserver sweeps abandoned
// cluster directories). A proxy made on another machine or in another
// container is never touched: its pid means nothing here.

// runPrefix names this run's proxies; run is random, as one process may
// hold several injectors.
func runPrefix() string {
	id := make([]byte, 4)
	rand.Read(id)
	return fmt.Sprintf("outboxlab_%s_%d_%s_", machineTag(), os.Getpid(), hex.EncodeToString(id))
}

// machineTag identifies the kernel boot and PID namespace this process
// runs in, in which its pid is meaningful.
func machineTag() string {
	boot, err1 := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, err2 := os.Readlink("/proc/self/ns/pid")
	if err1 != nil || err2 != nil {
		return "unknown" // never swept: liveness cannot be told
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(string(boot)) + " " + ns))
	return hex.EncodeToString(sum[:4])
}

// sweep deletes the proxies abandoned on this machine; a failure only
// leaves them, to be reported if the range runs out.
func (ps *externalProxies) sweep() {
	all, err := ps.api.Proxies()
	if err != nil {
		return
	}
	here := machineTag()
	for name, p := range all {
		if abandoned(name, here) {
			p.Delete()
		}
	}
}

// abandoned: name is an outboxlab proxy made on this machine by a process
// that no longer exists.
func abandoned(name, machine string) bool {
	f := strings.SplitN(name, "_", 5)
	if len(f) < 5 || f[0] != "outboxlab" || f[1] != machine || machine == "unknown" {
		return false
	}
	pid, err := strconv.Atoi(f[2])
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return !proc.Alive(pid)
}
