package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"

	"github.com/scenario-server/scenario-server/store/sqlite"
)

const backupUsage = `Usage: scenario-server backup --to DIR [--data-dir DIR]

Copies the SQLite store of --data-dir (env ` + envDataDir + `) into the new directory --to, while a
server may go on using it: the database as of one moment (SQLite's VACUUM INTO, the write-ahead
log included), and the server's ` + serverIDFile + ` and ` + sessionKeyFile + ` files. A server started with
--data-dir set to the copy resumes from it. Copying scenario-server.db alone is not a backup:
what its -wal file holds beside it is lost. A PostgreSQL store (` + envDatabaseURL + `) is
backed up with pg_dump.

`

// backupCommand runs "scenario-server backup".
func backupCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, backupUsage); fs.PrintDefaults() }
	dataDir := fs.String("data-dir", envOr(getenv, envDataDir, defaultDataDir), "the SQLite store's `dir` (env "+envDataDir+")")
	to := fs.String("to", "", "the new `dir` the copy goes into (it must not exist, or be empty)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 || *to == "" {
		fs.Usage()
		return fmt.Errorf("%w: backup needs --to DIR, and takes no arguments", errUsage)
	}
	if getenv(envDatabaseURL) != "" {
		return fmt.Errorf("%w: the store is PostgreSQL (%s): back it up with pg_dump, and the data directory's %s and %s files beside it", errUsage, envDatabaseURL, serverIDFile, sessionKeyFile)
	}
	made := false
	if entries, err := os.ReadDir(*to); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty: give a new directory", *to)
	} else if errors.Is(err, iofs.ErrNotExist) {
		made = true
	} else if err != nil {
		return err
	}
	if err := os.MkdirAll(*to, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(*to, 0o700); err != nil { // an empty directory given keeps no wider mode
		return err
	}
	size, copied, err := backupInto(ctx, *dataDir, *to)
	if err != nil {
		if made {
			os.RemoveAll(*to) // nothing that looks like a backup is left
		}
		return err
	}
	fmt.Fprintf(stdout, "backed up %s to %s (%d bytes%s); a server started with --data-dir %s resumes from it\n",
		filepath.Join(*dataDir, sqlite.FileName), *to, size, copied, *to)
	return nil
}

// backupInto writes the store of dataDir and its server's files into the directory to, each
// synced to disk, and returns the database copy's size and ", server-id, session-key" for
// the files it copied.
func backupInto(ctx context.Context, dataDir, to string) (int64, string, error) {
	size, err := sqlite.Backup(ctx, dataDir, filepath.Join(to, sqlite.FileName))
	if err != nil {
		return 0, "", err
	}
	copied := ""
	for _, name := range []string{serverIDFile, sessionKeyFile} {
		b, err := os.ReadFile(filepath.Join(dataDir, name))
		if errors.Is(err, iofs.ErrNotExist) {
			continue
		}
		if err == nil {
			err = writeSynced(filepath.Join(to, name), b)
		}
		if err != nil {
			return 0, "", fmt.Errorf("copying %s: %w", name, err)
		}
		copied += ", " + name
	}
	return size, copied, sqlite.SyncDir(to)
}

// writeSynced writes b to a new file at path, readable by its owner only, synced to disk.
func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
