package worker

import "time"

// A waiting step: the parent sends a statement that may wait on another
// transaction's row lock (Request.MayWait), learns from the server that it
// waits, goes on with other steps, and reads the answer once the lock's
// holder has ended. Between StartWatched and AwaitWaiting the process has a
// request outstanding and must be sent nothing else.

// StartWatched sends req and returns its answer if it comes without a wait;
// if the server shows the backend waiting on a lock first, it returns
// ErrBlocked and the answer stays to be read by AwaitWaiting.
func (p *Process) StartWatched(req Request, interval time.Duration, blockedBy func(Backend) string) (Response, error) {
	req.MayWait = true
	return p.DoWatched(req, interval, blockedBy)
}

// AwaitWaiting reads the answer of the request StartWatched left waiting,
// for up to WaitTimeout (the worker's own limit for it) and a margin.
// ErrHung means it never came: the process must then be killed.
func (p *Process) AwaitWaiting() (Response, error) {
	return p.await(WaitTimeout + 2*time.Second)
}
