package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LockFileName is the lock file LockDataDir holds in the data directory; it contains the
// process id of its holder.
const LockFileName = "scenario-server.lock"

// ErrDataDirLocked is what a *DataDirLockedError matches with errors.Is.
var ErrDataDirLocked = errors.New("data directory in use")

// DataDirLockedError is LockDataDir's error when another process holds the data directory.
type DataDirLockedError struct {
	// Dir is the data directory, as an absolute path.
	Dir string
	// PID is the holder's process id as it wrote it in the lock file; 0 when unknown.
	PID int
}

func (e *DataDirLockedError) Error() string {
	holder := "another process"
	if e.PID > 0 {
		holder = fmt.Sprintf("another process (pid %d)", e.PID)
	}
	return fmt.Sprintf("the data directory %s is in use by %s: one server per data directory; stop it, or start this one with another --data-dir", e.Dir, holder)
}

// Is makes errors.Is(err, ErrDataDirLocked) true.
func (e *DataDirLockedError) Is(target error) bool { return target == ErrDataDirLocked }

// DirLock is an exclusive lock on a data directory; Unlock releases it. The operating system
// releases it too when the process ends, however it ends.
type DirLock struct {
	f *os.File
}

// LockDataDir creates dataDir (mode 0o750) when missing and takes an exclusive lock on its
// lock file (flock, where the system has it), without waiting: a server holds it from start
// to exit, so that a second server on the same directory stops before it touches anything.
// Errors: *DataDirLockedError (errors.Is ErrDataDirLocked) when another process holds it;
// the directory or file cannot be created.
func LockDataDir(dataDir string) (*DirLock, error) {
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("locating data directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, LockFileName), os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("opening the lock file of %s: %w", dir, err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	if held {
		b, _ := os.ReadFile(f.Name())
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		f.Close()
		return nil, &DataDirLockedError{Dir: dir, PID: pid}
	}
	// The holder's pid, for the message of the next process that tries.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &DirLock{f: f}, nil
}

// Unlock empties the lock file, the holder's pid, and releases the lock. Calls after the
// first return nil. After a process that ended without it (killed) the file keeps a pid that
// may be another process's by then: a script's kill -TERM $(cat scenario-server.lock) on a
// stopped server signalled it (a new-user round); after a clean stop the file is empty.
func (l *DirLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	_ = f.Truncate(0)
	return f.Close() // closing the last descriptor releases the flock
}
