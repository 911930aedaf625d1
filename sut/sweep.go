package sut

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/outboxlab/outboxlab/internal/proc"
)

// Every schema a run creates carries a comment naming its host and
// process. A run killed before it could drop its schemas (SIGKILL, a
// crash) leaves them in a user's database; the next run on the same host
// drops the ones whose process is gone. Schemas of live runs and of other
// hosts are never touched.

var ownerComment = regexp.MustCompile(`^outboxlab run host=(\S+) pid=(\d+)$`)

func schemaOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("outboxlab run host=%s pid=%d", host, os.Getpid())
}

var sweepOnce sync.Once

// sweepAbandonedSchemas sweeps once per process, at its first install.
func sweepAbandonedSchemas(ctx context.Context, conn *pgx.Conn) {
	sweepOnce.Do(func() { SweepAbandonedSchemas(ctx, conn) })
}

// SweepAbandonedSchemas drops this host's outboxlab schemas whose run is
// gone. Best effort: an error leaves them for the next run.
func SweepAbandonedSchemas(ctx context.Context, conn *pgx.Conn) {
	{
		rows, err := conn.Query(ctx, `SELECT n.nspname, obj_description(n.oid, 'pg_namespace')
			FROM pg_namespace n WHERE n.nspname LIKE 'outboxlab\_%'`)
		if err != nil {
			return
		}
		type schema struct{ name, comment string }
		var found []schema
		for rows.Next() {
			var s schema
			var comment *string
			if rows.Scan(&s.name, &comment) == nil && comment != nil {
				s.comment = *comment
				found = append(found, s)
			}
		}
		rows.Close()
		host, _ := os.Hostname()
		for _, s := range found {
			m := ownerComment.FindStringSubmatch(s.comment)
			if m == nil || m[1] != host {
				continue
			}
			pid, _ := strconv.Atoi(m[2])
			if pid == os.Getpid() || proc.Alive(pid) {
				continue
			}
			conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{s.name}.Sanitize()+" CASCADE")
		}
	}
}
