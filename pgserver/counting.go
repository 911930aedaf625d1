package pgserver

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// countingSettings load pg_stat_statements, which counts every statement
// the server executes, utility statements (BEGIN, COMMIT) and those inside
// functions included. Only bench's round-trip figure asks for it: it
// costs every statement a little, and no check needs it.
var countingSettings = []string{
	"shared_preload_libraries=pg_stat_statements",
	"pg_stat_statements.track=all",
	"pg_stat_statements.track_utility=on",
}

// StartCounting starts a throwaway local cluster, as Start does from local
// binaries, whose server counts statements (pg_stat_statements, created in
// the postgres database): bench's round_trips_per_step. It needs local
// binaries (a user's server or a container is not ours to restart with
// the library loaded).
func StartCounting(ctx context.Context) (*Server, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	c, err := startClusterWith(ctx, bin, countingSettings, (*cluster).startReaper)
	if err != nil {
		return nil, fmt.Errorf("start a counting cluster from %s: %w", bin, err)
	}
	s, err := adopt(ctx, "local", c.connString(), c, nil)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, s.ConnString())
	if err == nil {
		_, err = conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
		conn.Close(context.Background())
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("create pg_stat_statements: %w", err)
	}
	return s, nil
}
