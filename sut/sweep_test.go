package sut

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/pgserver"
)

// TestSweepDropsOnlyAbandonedSchemas: a schema left by a dead run of this
// host is dropped by the next install; a live run's, another host's and an
// unlabelled one are left alone.
func TestSweepDropsOnlyAbandonedSchemas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := pgserver.Shared()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	schemas := map[string]string{
		"outboxlab_sweep_dead":  fmt.Sprintf("outboxlab run host=%s pid=%d", host, dead.Process.Pid),
		"outboxlab_sweep_live":  fmt.Sprintf("outboxlab run host=%s pid=%d", host, os.Getppid()),
		"outboxlab_sweep_other": fmt.Sprintf("outboxlab run host=%s-elsewhere pid=%d", host, dead.Process.Pid),
		"outboxlab_sweep_user":  "",
	}
	for name, comment := range schemas {
		if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
			t.Fatal(err)
		}
		defer conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+name+" CASCADE")
		if comment != "" {
			conn.Exec(ctx, "COMMENT ON SCHEMA "+name+" IS "+quoteLiteral(comment))
		}
	}
	sweepOnce = sync.Once{}
	p, err := Resolve("leased")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := Install(ctx, srv.ConnString(), p)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	for name := range schemas {
		var exists bool
		conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", name).Scan(&exists)
		if want := name != "outboxlab_sweep_dead"; exists != want {
			t.Errorf("schema %s exists=%v after the sweep, want %v", name, exists, want)
		}
	}
	var comment string
	conn.QueryRow(ctx, "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1", inst.Statements.Schema).Scan(&comment)
	if !ownerComment.MatchString(comment) {
		t.Errorf("the run's schema is labelled %q, want its host and pid", comment)
	}
}
