package worker

import (
	"runtime"
	"sync"

	"github.com/outboxlab/outboxlab/workerproto"
)

// A small stock of started, idle Go worker processes: exec and runtime
// start-up of a process cost several milliseconds, which a state machine
// that kills and respawns workers thousands of times per run (and more
// while shrinking) should not pay on its critical path. An idle process
// blocks on its stdin, waiting for init, and dies with the parent like any
// worker (Pdeathsig).
const warmStock = 4

var warm struct {
	once  sync.Once
	procs chan *workerproto.Client
}

func takeWarm() (*workerproto.Client, error) {
	warm.once.Do(func() {
		warm.procs = make(chan *workerproto.Client, warmStock)
		go refill()
	})
	select {
	case c := <-warm.procs:
		if c != nil {
			return c, nil
		}
	default:
	}
	return startGo()
}

// refill keeps the stock full for the life of the process. It runs on a
// goroutine locked to its own OS thread, which never exits: Pdeathsig fires
// when the thread that started a child ends, not the process.
func refill() {
	runtime.LockOSThread()
	for {
		c, err := startGo()
		if err != nil {
			return
		}
		warm.procs <- c
	}
}
