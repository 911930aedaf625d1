package pgserver

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// startStandby builds a streaming standby of primary in a cluster
// directory of its own (with its own reaper), starts it and waits until
// the primary streams to it (as a synchronous standby under SyncStandby).
func startStandby(ctx context.Context, d *deployment, primary *cluster) (*cluster, error) {
	settings := append(slices.Clone(d.settings), fmt.Sprintf(
		"primary_conninfo=host=127.0.0.1 port=%d user=postgres application_name=%s", primary.port, standbyName))
	c, err := newCluster(d.bin, settings, (*cluster).startTopologyReaper)
	if err != nil {
		return nil, err
	}
	if err := baseBackup(ctx, primary, c); err != nil {
		c.destroy()
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		c.destroy()
		return nil, fmt.Errorf("start the standby: %w", err)
	}
	if err := waitStreaming(ctx, primary, d.topo == SyncStandby); err != nil {
		c.destroy()
		return nil, err
	}
	return c, nil
}

func waitStreaming(ctx context.Context, primary *cluster, sync bool) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := primary.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for {
		var ok bool
		err := conn.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_stat_replication
			WHERE application_name = $1 AND state = 'streaming' AND (NOT $2 OR sync_state = 'sync')`,
			standbyName, sync).Scan(&ok)
		switch {
		case err != nil:
			return fmt.Errorf("wait for the standby to stream: %w", err)
		case ok:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the standby did not stream within 30s: %w", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// waitReplayed is MarkDurable for a standby topology: it returns once the
// standby has replayed all the WAL the primary has flushed, so every
// commit acknowledged so far survives a failover.
func (d *deployment) waitReplayed(ctx context.Context) error {
	switch {
	case d.standby == nil:
		return fmt.Errorf("mark durable: %w", errNoStandby)
	case d.stalled != 0:
		return fmt.Errorf("mark durable: replication is stalled; nothing more reaches the standby before Failover")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pconn, err := d.primary.control(ctx)
	if err != nil {
		return fmt.Errorf("mark durable: %w", err)
	}
	var target string
	if err := d.primary.controlFailed(pconn.QueryRow(ctx, "SELECT pg_current_wal_flush_lsn()::text").Scan(&target)); err != nil {
		return fmt.Errorf("mark durable: read the primary's WAL position: %w", err)
	}
	sconn, err := d.standby.control(ctx)
	if err != nil {
		return fmt.Errorf("mark durable: %w", err)
	}
	for {
		var done bool
		if err := d.standby.controlFailed(sconn.QueryRow(ctx, "SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)",
			target).Scan(&done)); err != nil {
			return fmt.Errorf("mark durable: read the standby's replay position: %w", err)
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("mark durable: the standby did not replay up to %s within 30s", target)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// stall stops the primary's WAL sender. Data it already handed to the
// kernel still reaches the standby; WAL written after stall returns does
// not. (Stopping the standby's WAL receiver would not do: what is in its
// socket still arrives when it resumes, as at promotion.)
func (d *deployment) stall(ctx context.Context) error {
	switch {
	case d.standby == nil:
		return fmt.Errorf("stall: %w", errNoStandby)
	case d.stalled != 0:
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, err := d.primary.control(ctx)
	if err != nil {
		return fmt.Errorf("stall: %w", err)
	}
	var pid int
	if err := d.primary.controlFailed(conn.QueryRow(ctx, "SELECT pid FROM pg_stat_replication WHERE application_name = $1",
		standbyName).Scan(&pid)); err != nil {
		return fmt.Errorf("stall: find the WAL sender: %w", err)
	}
	if err := d.primary.controlFailed(stopWhileIdle(ctx, conn, pid)); err != nil {
		return fmt.Errorf("stall: stop the WAL sender: %w", err)
	}
	d.stalled, d.stalledAt = pid, time.Now()
	return nil
}
