package pgserver

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// A deployment's MarkDurable and Stall run at the start of every check on
// async-standby; a connection opened for each of them cost more than the
// work itself (BenchmarkStallCycle). Each server of a deployment keeps one
// administrative connection instead, dropped when the server is killed
// and whenever a statement on it fails.

// control is this server's administrative connection, opened on first use.
func (c *cluster) control(ctx context.Context) (*pgx.Conn, error) {
	if c.ctl != nil && !c.ctl.IsClosed() {
		return c.ctl, nil
	}
	conn, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	c.ctl = conn
	return conn, nil
}

// dropControl closes the administrative connection, if one is open.
func (c *cluster) dropControl() {
	if c.ctl != nil {
		c.ctl.Close(context.Background())
		c.ctl = nil
	}
}

// controlFailed drops the connection after err, so that the next use opens
// a fresh one, and returns err.
func (c *cluster) controlFailed(err error) error {
	if err != nil {
		c.dropControl()
	}
	return err
}
