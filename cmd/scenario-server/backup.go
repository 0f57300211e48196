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

const backupUsage = `Usage: scenario-server backup --to DIR [--data-dir DIR] [--sink-dir DIR]

Copies the SQLite store of --data-dir (env ` + envDataDir + `) into the new directory --to, while a
server may go on using it: the database as of one moment (SQLite's VACUUM INTO, the write-ahead
log included), the server's ` + serverIDFile + ` and ` + sessionKeyFile + ` files, and then the files the
deployed file sinks write (--sink-dir, as the server's; by default the data directory's sinks/)
into the copy's sinks/. A server started with --data-dir set to the copy resumes from it: a file
sink's file, copied after the database, cut back to its checkpoint's size. The file sources'
files are not copied (they are the server's inputs, not its state): copy the source directory
with them; a file source whose file has another device and inode than its checkpoint's but the
same bytes (its first 4 KiB and the 4 KiB before the position) goes on from its position. Copying scenario-server.db alone is
not a backup: what its -wal file holds beside it is lost. A PostgreSQL store (` + envDatabaseURL + `)
is backed up with pg_dump.

`

// backupCommand runs "scenario-server backup".
func backupCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, backupUsage); fs.PrintDefaults() }
	dataDir := fs.String("data-dir", envOr(getenv, envDataDir, defaultDataDir), "the SQLite store's `dir` (env "+envDataDir+")")
	to := fs.String("to", "", "the new `dir` the copy goes into (it must not exist, or be empty)")
	sinkDir := fs.String("sink-dir", getenv(envSinkDir), "the file sinks' `dir`, as the server's --sink-dir (env "+envSinkDir+"; default: the data directory's sinks/)")
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
	var files []string
	for _, d := range []struct{ flag, dir, name string }{{"--sink-dir", *sinkDir, "sinks"}} {
		if err != nil {
			break
		}
		from := d.dir
		if from == "" {
			from = filepath.Join(*dataDir, d.name)
		}
		var n int
		var bytes int64
		n, bytes, err = copyTree(ctx, from, filepath.Join(*to, d.name))
		if err == nil && n > 0 {
			noun := "files"
			if n == 1 {
				noun = "file"
			}
			line := fmt.Sprintf("%s: %d %s, %d bytes, into %s", from, n, noun, bytes, filepath.Join(*to, d.name))
			if d.dir != "" {
				line += fmt.Sprintf(" (start the copy with %s %s)", d.flag, filepath.Join(*to, d.name))
			}
			files = append(files, line)
		}
	}
	if err == nil {
		err = sqlite.SyncDir(*to)
	}
	if err != nil {
		if made {
			os.RemoveAll(*to) // nothing that looks like a backup is left
		}
		return err
	}
	fmt.Fprintf(stdout, "backed up %s to %s (%d bytes%s); a server started with --data-dir %s resumes from it\n",
		filepath.Join(*dataDir, sqlite.FileName), *to, size, copied, *to)
	for _, f := range files {
		fmt.Fprintf(stdout, "and the files of %s\n", f)
	}
	return nil
}

// copyTree copies the directories and regular files under from into the new directory to,
// each file synced (the files of deployed file sinks, read while they may be appended to: a
// restore cuts a sink's file back to its checkpoint's size, which the database copied before
// holds), and returns how many files and bytes it copied; nothing when from does not exist.
// Other entries (links, sockets) are left out, as a deployed file sink or source does not use
// them.
func copyTree(ctx context.Context, from, to string) (files int, bytes int64, err error) {
	// A directory given as a link (to another disk) is walked where it leads.
	from, err = filepath.EvalSymlinks(from)
	if errors.Is(err, iofs.ErrNotExist) {
		return 0, 0, nil
	} else if err != nil {
		return 0, 0, err
	}
	err = filepath.WalkDir(from, func(path string, e iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		switch {
		case e.IsDir():
			return os.MkdirAll(dst, 0o700)
		case e.Type().IsRegular():
			n, err := copySynced(path, dst)
			if errors.Is(err, iofs.ErrNotExist) {
				return nil // gone since the walk listed it (a file rotated away)
			}
			files, bytes = files+1, bytes+n
			return err
		}
		return nil
	})
	if err != nil {
		return files, bytes, fmt.Errorf("copying %s: %w", from, err)
	}
	return files, bytes, nil
}

// copySynced copies the file from into a new file to, readable by its owner only, synced.
func copySynced(from, to string) (int64, error) {
	in, err := os.Open(from)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	return n, errors.Join(err, out.Close())
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
	return size, copied, nil
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
