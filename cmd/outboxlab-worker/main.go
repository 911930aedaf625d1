// Command outboxlab-worker is the suite's worker process for protocol
// files: pgx and the worker loop (package worker), nothing else. The
// harness starts it itself (it builds it with the go command on first use,
// worker/executable.go); a kill restarts it, so its start-up is what a
// kill costs (docs/performance.md, worker_start_cpu_ms). Run by hand it
// says what it is and exits with status 2.
package main

import (
	"fmt"
	"os"

	"github.com/outboxlab/outboxlab/worker"
)

func main() {
	worker.MainIfWorker()
	fmt.Fprintln(os.Stderr, "outboxlab-worker: started by outboxlab as a worker process (OUTBOXLAB_WORKER set); it is not run by hand")
	os.Exit(2)
}
