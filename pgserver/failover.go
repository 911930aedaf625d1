package pgserver

import (
	"context"
	"fmt"
	"time"
)

// failover is the standby topologies' fault (see Server.Failover). The
// report is filled in as far as the failover got, also on error.
func (d *deployment) failover(ctx context.Context) (FailoverReport, error) {
	r := FailoverReport{LostWAL: -1}
	if d.standby == nil {
		return r, fmt.Errorf("failover: %w", errNoStandby)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	start := time.Now()
	if d.stalled != 0 {
		r.Stalled = start.Sub(d.stalledAt)
	}
	flushed, flushedErr := d.primary.flushLSN(ctx)
	d.front.hold()
	if err := d.primary.killAll(); err != nil {
		return r, fmt.Errorf("failover: kill the primary: %w", err)
	}
	d.stalled = 0
	r.Kill = time.Since(start)

	phase := time.Now()
	sconn, err := d.standby.connect(ctx)
	if err != nil {
		return r, fmt.Errorf("failover: %w", err)
	}
	defer sconn.Close(context.Background())
	if flushedErr == nil {
		// How much the standby never got: the rewind, in bytes.
		if err := sconn.QueryRow(ctx, `SELECT greatest(0, pg_wal_lsn_diff($1::pg_lsn,
			coalesce(pg_last_wal_receive_lsn(), '0/0')))::bigint`, flushed).Scan(&r.LostWAL); err != nil {
			return r, fmt.Errorf("failover: read the standby's WAL position: %w", err)
		}
	}
	if err := promote(ctx, d.standby); err != nil {
		return r, fmt.Errorf("failover: %w", err)
	}
	d.front.point(d.standby.addr())
	r.Promote = time.Since(phase)

	phase = time.Now()
	old := d.primary
	d.primary, d.standby = d.standby, nil
	old.destroy()
	standby, err := startStandby(ctx, d, d.primary)
	if err != nil {
		return r, fmt.Errorf("failover: rebuild the old primary as the new standby: %w", err)
	}
	d.standby = standby
	r.Rebuild = time.Since(phase)

	// The base backup of the rebuild ran a checkpoint on the new primary;
	// before one, pg_control_checkpoint() still shows the old timeline.
	if err := sconn.QueryRow(ctx, "SELECT timeline_id FROM pg_control_checkpoint()").Scan(&r.Timeline); err != nil {
		return r, fmt.Errorf("failover: read the new timeline: %w", err)
	}
	return r, nil
}

// flushLSN is how far this server has flushed its WAL. The caller goes on
// without it when the server does not answer within a second.
func (c *cluster) flushLSN(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := c.connect(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	var lsn string
	err = conn.QueryRow(ctx, "SELECT pg_current_wal_flush_lsn()::text").Scan(&lsn)
	return lsn, err
}

// promote ends the standby's recovery and waits until it accepts writes.
// pg_promote(wait => true) would do the same but looks only every 100 ms.
func promote(ctx context.Context, standby *cluster) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := standby.connect(ctx)
	if err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SELECT pg_promote(false)"); err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	for {
		var recovering bool
		if err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovering); err != nil {
			return fmt.Errorf("promote: %w", err)
		}
		if !recovering {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("promote: still in recovery after a minute")
		case <-time.After(2 * time.Millisecond):
		}
	}
}
