package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/machine"
	"github.com/outboxlab/outboxlab/pgserver"
)

// RoundTrips is what a state-machine step costs in statements, counted on
// the server's side.
type RoundTrips struct {
	// PerStep is the statements the server executed (pg_stat_statements'
	// calls, BEGIN and COMMIT included) over the steps that ran: the
	// workers', the harness's state reads, fixtures, resets and drains.
	// Each statement of the extended protocol is one round trip (Bind,
	// Execute, Sync); a simple-protocol string of several (the reset)
	// counts each, so this bounds the round trips from above.
	PerStep float64
	// StateReadShare is the harness's state reads (counted by the
	// harness) over those statements: the observation's share.
	StateReadShare float64
	Steps          int
}

// CountRoundTrips runs checks of leased on a counting cluster of its own
// (pgserver.StartCounting), after one uncounted check that spawns the
// workers, and counts the statements its server executed.
func CountRoundTrips(ctx context.Context, cfg machine.Config, checks int, seed uint64) (RoundTrips, error) {
	srv, err := pgserver.StartCounting(ctx)
	if err != nil {
		return RoundTrips{}, err
	}
	defer srv.Close()
	inst, err := Install(ctx, srv, "leased")
	if err != nil {
		return RoundTrips{}, err
	}
	defer inst.Close()
	h := machine.New(srv, inst, cfg)
	defer h.Close()
	if err := RunChecks(h, 1, seed, h.Check); err != nil {
		return RoundTrips{}, fmt.Errorf("warm-up: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, srv.ConnString())
	if err != nil {
		return RoundTrips{}, err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(cctx, "SELECT pg_stat_statements_reset()"); err != nil {
		return RoundTrips{}, err
	}
	_, s0, _ := h.Stats()
	r0 := h.StateReads()
	if err := RunChecks(h, checks, seed+1, h.Check); err != nil {
		return RoundTrips{}, err
	}
	_, s1, _ := h.Stats()
	reads := h.StateReads() - r0
	var statements int64
	// The reset's own call is the one statement of this connection's
	// that the count holds; it is left out by its text. The read has a
	// deadline of its own: the checks before it may take longer than the
	// connection's on a loaded machine.
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	defer rcancel()
	err = conn.QueryRow(rctx, `SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
		WHERE query NOT LIKE '%pg_stat_statements%'`).Scan(&statements)
	if err != nil {
		return RoundTrips{}, fmt.Errorf("read pg_stat_statements: %w", err)
	}
	steps := s1 - s0
	if steps == 0 || statements == 0 {
		return RoundTrips{}, fmt.Errorf("nothing counted: %d steps, %d statements", steps, statements)
	}
	return RoundTrips{PerStep: float64(statements) / float64(steps),
		StateReadShare: float64(reads) / float64(statements), Steps: steps}, nil
}
