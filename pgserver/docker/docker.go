// Package docker is pgserver's last resort, a postgres container, for
// the binaries that import it (the outboxlab command does): it registers
// itself with pgserver.RegisterContainer, so that a binary that does not
// import it links no Docker client.
package docker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/pgserver"

	"github.com/ory/dockertest/v3"
	"github.com/ory/dockertest/v3/docker"
)

func init() {
	pgserver.RegisterContainer(func(ctx context.Context) (pgserver.Container, error) {
		d, err := start(ctx)
		if err != nil {
			return nil, err // not a nil *dockerServer in a non-nil Container
		}
		return d, nil
	})
}

// dockerServer is a postgres container, the last resort when no server was
// configured and no local binaries exist. It is removed on close and expires
// on its own after an hour if this process dies first.
type dockerServer struct {
	pool       *dockertest.Pool
	res        *dockertest.Resource
	connString string
}

func start(ctx context.Context) (*dockerServer, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	ping := make(chan error, 1)
	go func() { ping <- pool.Client.Ping() }()
	select {
	case err := <-ping:
		if err != nil {
			return nil, fmt.Errorf("docker daemon not reachable: %w", err)
		}
	case <-time.After(3 * time.Second):
		return nil, errors.New("docker daemon did not answer a ping within 3s")
	}
	res, err := pool.RunWithOptions(&dockertest.RunOptions{
		Repository: "postgres",
		Tag:        "18",
		Env:        []string{"POSTGRES_HOST_AUTH_METHOD=trust"},
		Cmd:        []string{"postgres", "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=200"},
	}, func(hc *docker.HostConfig) {
		hc.AutoRemove = true
		hc.RestartPolicy = docker.RestartPolicy{Name: "no"}
	})
	if err != nil {
		return nil, fmt.Errorf("start postgres container: %w", err)
	}
	res.Expire(3600)
	d := &dockerServer{pool: pool, res: res,
		connString: fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", res.GetHostPort("5432/tcp"))}
	pool.MaxWait = 60 * time.Second
	err = pool.Retry(func() error {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		conn, err := pgx.Connect(cctx, d.connString)
		if err != nil {
			return err
		}
		return conn.Close(cctx)
	})
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("postgres container did not accept connections: %w", err)
	}
	return d, nil
}

// ConnString reaches the container's database.
func (d *dockerServer) ConnString() string { return d.connString }

// Close removes the container.
func (d *dockerServer) Close() {
	if d.res != nil {
		d.pool.Purge(d.res)
	}
}
