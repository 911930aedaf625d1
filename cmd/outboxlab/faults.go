package main

import (
	"errors"

	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/pgserver"
)

// attachFaults gives the harness its fault injector (toxiproxy per worker,
// server restarts). Filled in by the faults work.
func attachFaults(srv *pgserver.Server, h *machine.Harness) (func(), error) {
	return nil, errors.New("faults are not available yet: run with --faults=false")
}
