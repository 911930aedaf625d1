package machine

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxlab/outboxlab/worker"
)

// Workers behind a pooler (the pooler topologies). The harness and the
// fixtures connect to the server directly; every worker but the rescuer
// connects where the server says workers connect (WorkerConnString), and
// the harness finds its server backend by its application_name
// (worker.Backend), since a pooled connection's backend is not its own.
//
// Under a transaction pooler the workers' transactions share fewer server
// connections than there are workers (SharedServerConns). A statement
// sent while every one of them is held by an open transaction waits for
// one to come free: no lock wait (no waiting step, no "claims never
// wait" rule broken), but in a machine that runs one step at a time it
// would wait for a step that never comes. The machine does not draw it:
// a worker holding no server connection takes a step that needs one only
// while one is free (serverConnFree).

// workerConnString is where the workers connect when no fault proxy
// stands between: the server, or its pooler's database for the schema.
func (h *Harness) workerConnString() (string, error) {
	if h.workerConn == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cs, err := h.Srv.WorkerConnString(ctx, h.Inst.Statements.Schema)
		if err != nil {
			return "", fmt.Errorf("where the workers connect: %w", err)
		}
		h.workerConn = cs
	}
	return h.workerConn, nil
}

// serverConnFree reports whether w may send a statement that needs a
// server connection: always, unless the workers share a pool of them and
// every one is held by another worker's open transaction, waiting step or
// open split. (One w holds already stays its own.)
func (r *run) serverConnFree(w string) bool {
	shared := r.h.Srv.SharedServerConns()
	if shared == 0 {
		return true
	}
	holders := map[string]bool{}
	for _, s := range r.states {
		for _, p := range s.Pending {
			holders[p.Worker] = true
		}
	}
	for _, h := range r.inFlight.holders() {
		holders[h] = true
	}
	delete(holders, rescuer) // it connects directly
	return holders[w] || len(holders) < shared
}

// waitsOnLock asks the server, on the harness's own connection, whether a
// worker's backend waits for a lock another live worker of the check
// holds, and names that worker. A failed probe says no: the statement is
// then judged by its timeout.
func (h *Harness) waitsOnLock(b worker.Backend) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	apps := h.pool.Apps()
	holders := make([]string, 0, len(apps))
	for app := range apps {
		holders = append(holders, app)
	}
	holder, err := b.BlockedBy(ctx, h.Inst.Conn, holders)
	if err != nil || holder == "" {
		return ""
	}
	return apps[holder]
}
