package concurrent

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/outboxlab/outboxlab/faults"
	"github.com/outboxlab/outboxlab/model"
)

// faultLoop injects one fault every 10 to 40 ms until the history ends, in
// turn a kill, a pause, a lost request and a lost reply on a random worker
// (the turn goes on from the last history's, so that a run of short
// histories still has every kind); with restart, the first fault is a
// server restart, and a history that ends before its first fault hands
// the restart to the next. Every fault is undone before the next. A kill and a restart are operations of the
// model (they roll back open transactions); the others are notes on the
// history, and make the statements they hit unknown.
func (h *history) faultLoop(stop <-chan struct{}, rng *rand.Rand, restart bool) map[string]int {
	fired := map[string]int{}
	kinds := []string{"kill", "pause", "request_lost", "reply_lost"}
	for round := h.r.faultRound; ; round++ {
		select {
		case <-stop:
			h.r.faultRound, h.r.restartDue = round, restart
			return fired
		case <-time.After(time.Duration(10+rng.IntN(30)) * time.Millisecond):
		}
		kind := kinds[round%len(kinds)]
		if restart {
			kind, restart = "db_restart", false
		}
		if h.inject(kind, h.r.workers[rng.IntN(len(h.r.workers))], rng) {
			fired[kind]++
		}
	}
}

func (h *history) inject(kind string, a *actor, rng *rand.Rand) bool {
	lane := h.r.faultClient()
	switch kind {
	case "kill":
		pid, backend := a.target()
		if pid == 0 {
			return false
		}
		a.slot.Taint()
		a.killed.Store(int64(pid))
		call := h.rec.call(lane, Input{Op: model.Op{Kind: model.Kill, Worker: a.name}})
		faults.Kill{Pid: pid}.Inject(context.Background())
		// Again after the signal: an operation that ended in between
		// took the first, and the next one finds the process dead.
		a.slot.Taint()
		h.endBackend(backend.Exited(), h.epoch.Load())
		h.rec.ret(call, Output{Out: model.Outcome{Kind: model.OK}})
		return true
	case "db_restart":
		// Every connection breaks: each actor's statements may fail while
		// the server is down, and its first after it is back.
		for _, b := range h.r.actors() {
			b.slot.Arm(true)
			b.slot.Taint()
		}
		h.board.Restarting().Store(1)
		defer h.board.Restarting().Store(0)
		h.fixtures.tainted.Store(true)
		call := h.rec.call(lane, Input{Op: model.Op{Kind: model.Restart}})
		h.epoch.Add(1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := h.r.in.Restart(ctx)
		h.epoch.Add(1)
		h.rec.ret(call, Output{Out: model.Outcome{Kind: model.OK}})
		for _, b := range h.r.actors() {
			b.slot.Arm(false)
			b.slot.Taint()
		}
		h.fixtures.tainted.Store(true)
		return err == nil
	}
	start := h.rec.now()
	var undo func()
	var err error
	switch kind {
	case "pause":
		pid, _ := a.target()
		if pid == 0 {
			return false
		}
		undo, err = faults.Pause{Pid: pid}.Inject(context.Background())
	case "request_lost":
		a.slot.Arm(true)
		a.slot.Taint()
		undo, err = h.r.in.LoseRequest(a.name)
	case "reply_lost":
		a.slot.Arm(true)
		a.slot.Taint()
		undo, err = h.r.in.LoseReply(a.name)
	}
	defer a.slot.Arm(false)
	if err != nil {
		return false
	}
	time.Sleep(time.Duration(2+rng.IntN(20)) * time.Millisecond)
	undo()
	a.slot.Taint() // the connection it broke fails when next used
	h.rec.note(a.client, start, kind)
	return true
}
