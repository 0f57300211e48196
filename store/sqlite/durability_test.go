package sqlite_test

import (
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/sqlite"
)

// openRaw opens the store's file directly, as something else than the store would.
func openRaw(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A checkpoint whose state lost a bit on disk, or whose positions are not positions, is
// refused with ErrCorrupt, never restored.
func TestDamagedCheckpoint(t *testing.T) {
	dir := t.TempDir()
	s, err := sqlite.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	if _, err := s.CreateScenario(ctx, "damaged", store.Draft{Graph: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	d, err := s.CreateDeployment(ctx, store.NewDeployment{Scenario: "damaged", Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	state := []byte("window state: 3 sessions open")
	if _, err := s.PutCheckpoint(ctx, store.Checkpoint{Deployment: d.ID, State: state, Positions: []store.SourcePosition{{Source: "in", Offset: 7}}}); err != nil {
		t.Fatal(err)
	}
	raw := openRaw(t, dir)

	flipped := append([]byte(nil), state...)
	flipped[10] ^= 0x01 // 's' (0x73) becomes 'r' (0x72)
	if _, err := raw.Exec(`UPDATE checkpoints SET state = ? WHERE deployment_id = ?`, flipped, d.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetLatestCheckpoint(ctx, d.ID)
	if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "CRC-32C") {
		t.Fatalf("a flipped bit: %v, want ErrCorrupt naming the CRC-32C", err)
	}
	if _, err := raw.Exec(`UPDATE checkpoints SET state = ? WHERE deployment_id = ?`, state, d.ID); err != nil {
		t.Fatal(err)
	}
	if cp, err := s.GetLatestCheckpoint(ctx, d.ID); err != nil || string(cp.State) != string(state) {
		t.Fatalf("the state put back: %q, %v", cp.State, err)
	}

	for _, positions := range []string{`[{"source":"in","partition":0,"offset":-5}]`, `[{"source":"in","offset":`, `[{"source":"","offset":1}]`, `{"source":"in"}`} {
		if _, err := raw.Exec(`UPDATE checkpoints SET positions = ? WHERE deployment_id = ?`, positions, d.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetLatestCheckpoint(ctx, d.ID); !errors.Is(err, store.ErrCorrupt) {
			t.Errorf("positions %s: %v, want ErrCorrupt", positions, err)
		}
	}

	// A checkpoint written before checksums were kept (NULL) is read as it is.
	if _, err := raw.Exec(`UPDATE checkpoints SET state = ?, state_crc32c = NULL, positions = '[]' WHERE deployment_id = ?`, flipped, d.ID); err != nil {
		t.Fatal(err)
	}
	if cp, err := s.GetLatestCheckpoint(ctx, d.ID); err != nil || string(cp.State) != string(flipped) {
		t.Errorf("a checkpoint without checksum: %q, %v", cp.State, err)
	}
}

// A full database (here: its page limit reached) fails writes with ErrStoreFull, and Ping
// reports it until a write succeeds again.
func TestDatabaseFull(t *testing.T) {
	s, err := sqlite.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	if _, err := s.CreateScenario(ctx, "full", store.Draft{Graph: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	w := sqlite.WriteDB(s)
	var pages int64
	if err := w.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	// max_page_count is the connection's: the store's one write connection gets it.
	if _, err := w.Exec(`PRAGMA max_page_count = ` + itoa(pages)); err != nil {
		t.Fatal(err)
	}
	log := store.EventLog{Scenario: "full", Source: "in"}
	big := []byte(`{"pad":"` + strings.Repeat("x", 256<<10) + `"}`) // 64 pages of 4 KiB at least
	_, err = s.AppendEvents(ctx, log, [][]byte{big})
	if !errors.Is(err, store.ErrStoreFull) {
		t.Fatalf("appending 256 KiB to a full database: %v, want ErrStoreFull", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, store.ErrStoreFull) {
		t.Errorf("Ping after a failed write: %v, want ErrStoreFull", err)
	}
	if _, err := w.Exec(`PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvents(ctx, log, [][]byte{big}); err != nil {
		t.Fatalf("appending once there is room: %v", err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping after a write succeeded again: %v", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A second process cannot lock a data directory that a process holds: it gets the directory
// and the holder's pid. The holder is this test's child, so the lock is another process's.
func TestLockDataDir(t *testing.T) {
	if os.Getenv("SQLITE_LOCK_HOLDER") != "" {
		l, err := sqlite.LockDataDir(os.Getenv("SQLITE_LOCK_HOLDER"))
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		os.Stdin.Read(make([]byte, 1)) // until the parent closes stdin
		l.Unlock()
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockDataDir$")
	cmd.Env = append(os.Environ(), "SQLITE_LOCK_HOLDER="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := out.Read(buf); err != nil || string(buf) != "locked\n" {
		t.Fatalf("the holder said %q, %v", buf, err)
	}
	_, err = sqlite.LockDataDir(dir)
	var locked *sqlite.DataDirLockedError
	if !errors.As(err, &locked) || !errors.Is(err, sqlite.ErrDataDirLocked) || locked.PID != cmd.Process.Pid {
		t.Errorf("locking a held directory: %v, want *DataDirLockedError with pid %d", err, cmd.Process.Pid)
	}
	if err != nil && (!strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "pid ")) {
		t.Errorf("message %q does not name the directory and the pid", err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	// The holder unlocked it: the file no longer names it.
	if b, err := os.ReadFile(filepath.Join(dir, sqlite.LockFileName)); err != nil || len(b) != 0 {
		t.Errorf("the lock file after its holder unlocked it: %q, %v; want it empty", b, err)
	}
	// Released when its holder ends: this process takes it.
	l, err := sqlite.LockDataDir(dir)
	if err != nil {
		t.Fatalf("locking after the holder ended: %v", err)
	}
	l.Unlock()
}

// DiskFree reads the free bytes of a directory's file system: more than none for a temporary
// directory, and an error for one that is not there.
func TestDiskFree(t *testing.T) {
	if free, err := sqlite.DiskFree(t.TempDir()); err != nil || free <= 0 {
		t.Errorf("DiskFree of a temporary directory: %d, %v", free, err)
	}
	if _, err := sqlite.DiskFree(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("DiskFree of a directory that is not there: no error")
	}
}
