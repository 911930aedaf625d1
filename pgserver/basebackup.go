package pgserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// baseBackup copies primary's data directory into standby's with the SQL
// backup API (pg_backup_start, a file copy, pg_backup_stop) and makes it a
// standby: the work of pg_basebackup -R, done in this process because some
// server builds (the 18.4 binaries of embedded-postgres) ship no
// pg_basebackup, only initdb, pg_ctl and postgres. Files change while they
// are copied; that is the API's contract: the server writes full-page
// images while a backup runs (even with full_page_writes=off), and the
// standby replays from the backup's start, which it streams from the
// primary (wal_keep_size keeps it there), so pg_wal is not copied.
func baseBackup(ctx context.Context, primary, standby *cluster) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := primary.connect(ctx)
	if err != nil {
		return fmt.Errorf("base backup: %w", err)
	}
	defer conn.Close(context.Background())
	// The backup belongs to this connection's session: it must stay open
	// to the end.
	if _, err := conn.Exec(ctx, "SELECT pg_backup_start('outboxlab standby', true)"); err != nil {
		return fmt.Errorf("base backup: pg_backup_start (PostgreSQL 15 or later): %w", err)
	}
	from, to := filepath.Join(primary.dir, "data"), filepath.Join(standby.dir, "data")
	if err := copyDataDir(from, to, standby.owner); err != nil {
		return fmt.Errorf("base backup: copy %s: %w", from, err)
	}
	var label, spcmap string
	if err := conn.QueryRow(ctx, "SELECT labelfile, spcmapfile FROM pg_backup_stop(false)").Scan(&label, &spcmap); err != nil {
		return fmt.Errorf("base backup: pg_backup_stop: %w", err)
	}
	files := map[string]string{"backup_label": label, "standby.signal": ""}
	if spcmap != "" {
		files["tablespace_map"] = spcmap
	}
	for name, text := range files {
		p := filepath.Join(to, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			return fmt.Errorf("base backup: %w", err)
		}
		if err := standby.owner(p); err != nil {
			return fmt.Errorf("base backup: %w", err)
		}
	}
	return nil
}

// owner gives a file to the user the server runs as (when root).
func (c *cluster) owner(path string) error {
	if c.cred == nil {
		return nil
	}
	return os.Lchown(path, int(c.cred.Uid), int(c.cred.Gid))
}

// Directories whose contents a base backup leaves out (the server's own
// runtime state, and pg_wal, streamed instead), and files likewise.
var (
	emptiedDirs  = []string{"pg_wal", "pg_replslot", "pg_dynshmem", "pg_notify", "pg_serial", "pg_snapshots", "pg_stat_tmp", "pg_subtrans"}
	skippedFiles = []string{"postmaster.pid", "postmaster.opts", "backup_label", "backup_label.old", "tablespace_map", "standby.signal", "recovery.signal"}
)

func copyDataDir(from, to string, own func(string) error) error {
	return filepath.WalkDir(from, func(path string, e fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed while we walked: a temporary file
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dest := filepath.Join(to, rel)
		top := strings.SplitN(rel, string(filepath.Separator), 2)[0]
		switch {
		case e.IsDir():
			if err := os.Mkdir(dest, 0o700); err != nil {
				return err
			}
			return own(dest)
		case rel != top && slices.Contains(emptiedDirs, top),
			rel == top && slices.Contains(skippedFiles, rel),
			e.Name() == "pg_internal.init", strings.HasPrefix(e.Name(), "pgsql_tmp"):
			return nil
		case !e.Type().IsRegular():
			return fmt.Errorf("%s: not a regular file (a tablespace link?)", rel)
		}
		if err := copyFile(path, dest); errors.Is(err, fs.ErrNotExist) {
			return nil // removed since the walk listed it
		} else if err != nil {
			return err
		}
		return own(dest)
	})
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
