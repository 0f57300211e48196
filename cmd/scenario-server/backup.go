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
	if entries, err := os.ReadDir(*to); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty: give a new directory", *to)
	} else if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(*to, 0o700); err != nil {
		return err
	}
	size, err := sqlite.Backup(ctx, *dataDir, filepath.Join(*to, sqlite.FileName))
	if err != nil {
		return err
	}
	copied := ""
	for _, name := range []string{serverIDFile, sessionKeyFile} {
		b, err := os.ReadFile(filepath.Join(*dataDir, name))
		if errors.Is(err, iofs.ErrNotExist) {
			continue
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(*to, name), b, 0o600)
		}
		if err != nil {
			return fmt.Errorf("copying %s: %w", name, err)
		}
		copied += ", " + name
	}
	fmt.Fprintf(stdout, "backed up %s to %s (%d bytes%s); a server started with --data-dir %s resumes from it\n",
		filepath.Join(*dataDir, sqlite.FileName), *to, size, copied, *to)
	return nil
}
