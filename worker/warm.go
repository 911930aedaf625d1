package worker

import (
	"runtime"
	"sync"
)

// A small stock of started, idle worker processes: exec and runtime start-up
// of a process cost several milliseconds, which a state machine that kills
// and respawns workers thousands of times per run (and more while
// shrinking) should not pay on its critical path. An idle process blocks on
// its stdin and dies with the parent like any worker (Pdeathsig).
const warmStock = 4

var warm struct {
	once  sync.Once
	procs chan *Process
}

func takeWarm() (*Process, error) {
	warm.once.Do(func() {
		warm.procs = make(chan *Process, warmStock)
		go refill()
	})
	select {
	case p := <-warm.procs:
		if p != nil {
			return p, nil
		}
	default:
	}
	return start()
}

// refill keeps the stock full for the life of the process. It runs on a
// goroutine locked to its own OS thread, which never exits: Pdeathsig fires
// when the thread that started a child ends, not the process.
func refill() {
	runtime.LockOSThread()
	for {
		p, err := start()
		if err != nil {
			return
		}
		warm.procs <- p
	}
}
