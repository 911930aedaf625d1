package main

import (
	"github.com/outboxlab/outboxlab/faults"
	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/pgserver"
)

// attachFaults gives the harness its fault injector: a proxy per worker for
// lost requests and replies, and restarts when this run owns srv.
func attachFaults(srv *pgserver.Server, h *machine.Harness) (func(), error) {
	return faults.Attach(h)
}
