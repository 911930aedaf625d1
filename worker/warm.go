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

// There is a stock per executable (executable.go): the small worker's for
// protocol files, the harness's own binary's for Go drivers and relays.
// A stock is started on its first use.
var warm struct {
	mu     sync.Mutex
	stocks map[string]chan *workerproto.Client
}

func takeWarm(exe string) (*workerproto.Client, error) {
	warm.mu.Lock()
	if warm.stocks == nil {
		warm.stocks = map[string]chan *workerproto.Client{}
	}
	stock := warm.stocks[exe]
	if stock == nil {
		stock = make(chan *workerproto.Client, warmStock)
		warm.stocks[exe] = stock
		go refill(exe, stock)
	}
	warm.mu.Unlock()
	select {
	case c := <-stock:
		if c != nil {
			return c, nil
		}
	default:
	}
	return startGo(exe)
}

// refill keeps a stock full for the life of the process. It runs on a
// goroutine locked to its own OS thread, which never exits: Pdeathsig fires
// when the thread that started a child ends, not the process.
func refill(exe string, stock chan *workerproto.Client) {
	runtime.LockOSThread()
	for {
		c, err := startGo(exe)
		if err != nil {
			return
		}
		stock <- c
	}
}
