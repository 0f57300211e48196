package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	iofs "io/fs"
	"net/url"
	"os"
	"path/filepath"
)

// Backup writes a consistent copy of the store in dataDir to the file to, which must not
// exist, while servers may go on using the store: SQLite's VACUUM INTO, from one read
// transaction (the copy is the store as of its start, the write-ahead log's committed
// transactions included, compacted), the file readable by its owner only. Copying the
// database file alone is not a backup: what the write-ahead log holds beside it is lost, and
// a copy taken during a write may be torn. It returns the copy's size in bytes.
// Errors: an error wrapping fs.ErrNotExist when dataDir holds no store; fs.ErrExist when to
// exists.
func Backup(ctx context.Context, dataDir, to string) (int64, error) {
	path, err := filepath.Abs(filepath.Join(dataDir, FileName))
	if err != nil {
		return 0, err
	}
	if _, err := os.Stat(path); err != nil {
		return 0, fmt.Errorf("no store at %s: %w", path, err)
	}
	if _, err := os.Lstat(to); err == nil {
		return 0, fmt.Errorf("%s: %w", to, iofs.ErrExist)
	} else if !errors.Is(err, iofs.ErrNotExist) {
		return 0, err
	}
	q := url.Values{"_pragma": {fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds())}}
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}).String())
	if err != nil {
		return 0, err
	}
	defer db.Close()
	// Written under a name of its own, made first with the owner's mode alone (the store
	// holds token hashes and every event; VACUUM INTO writes into an empty file), synced, and
	// then renamed: a backup cut short (a kill, a full disk) leaves no file that looks whole
	// (SQLite does not sync what VACUUM INTO writes).
	partial := to + ".partial"
	f, err := os.OpenFile(partial, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	f.Close()
	done := false
	defer func() {
		if !done {
			os.Remove(partial)
		}
	}()
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, partial); err != nil {
		return 0, fmt.Errorf("backing up %s: %w", path, err)
	}
	if err := syncFile(partial); err != nil {
		return 0, err
	}
	if err := os.Rename(partial, to); err != nil {
		return 0, err
	}
	done = true
	if err := SyncDir(filepath.Dir(to)); err != nil {
		return 0, err
	}
	fi, err := os.Stat(to)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// syncFile flushes the file at path to its disk.
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// SyncDir flushes the directory dir's entries (a file made or renamed in it) to its disk.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}
