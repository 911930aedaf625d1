package faults

import (
	"context"

	"github.com/outboxlab/outboxlab/pgserver"
)

// DBRestart stops the server immediately (no checkpoint: crash recovery on
// the way up) and starts it again on the same port. Every connection
// breaks and every open transaction is lost; committed work survives. The
// server is back when Inject returns, so the undo has nothing left to do.
type DBRestart struct{ srv *pgserver.Server }

func (DBRestart) Name() string { return "db_restart" }

func (f DBRestart) Inject(ctx context.Context) (func(), error) {
	return nothing, f.srv.Crash(ctx)
}
