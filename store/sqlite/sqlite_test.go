package sqlite_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/sqlite"
	"github.com/scenario-server/scenario-server/store/storetest"
)

func TestConformance(t *testing.T) {
	var mu sync.Mutex
	dirs := map[*testing.T]string{} // one data directory per subtest, reused on reopen
	storetest.Run(t, func(t *testing.T) store.Store {
		mu.Lock()
		dir, ok := dirs[t]
		if !ok {
			dir = filepath.Join(t.TempDir(), "data")
			dirs[t] = dir
		}
		mu.Unlock()
		s, err := sqlite.Open(t.Context(), dir)
		if err != nil {
			t.Fatalf("opening SQLite store in %s: %v", dir, err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestOpenCreatesDataDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "data")
	s, err := sqlite.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(filepath.Join(dir, sqlite.FileName)); err != nil {
		t.Errorf("database file: %v", err)
	}
}

func TestOpenRefusesNonDatabase(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, sqlite.FileName), []byte("this is not a database, just text that is long enough"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := sqlite.Open(t.Context(), dir); err == nil {
		s.Close()
		t.Fatal("Open of a text file succeeded")
	}
}

// Two stores on one data directory stand for two server processes: each has its own writer
// connection, so only BEGIN IMMEDIATE and the busy timeout keep their saves apart.
func TestTwoStoresOnOneDirectory(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	a, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := sqlite.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.CreateScenario(ctx, "shared", store.Draft{Graph: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	for base := 1; base <= 20; base++ {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, s := range []store.Store{a, b} {
			wg.Go(func() {
				_, errs[i] = s.SaveVersion(ctx, "shared", base, store.Draft{Graph: []byte(`[]`)})
			})
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			var conflict *store.ConflictError
			switch {
			case err == nil:
				wins++
			case !errors.As(err, &conflict):
				t.Fatalf("save on base %d: %v", base, err)
			}
		}
		if wins != 1 {
			t.Fatalf("save on base %d: %d of 2 won, want 1", base, wins)
		}
	}
}

// A new database and its write-ahead log are readable by the server's user only.
func TestDatabaseFilesPrivate(t *testing.T) {
	dir := t.TempDir()
	s, err := sqlite.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.ListTokens(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{sqlite.FileName, sqlite.FileName + "-wal"} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %v; want no access for group and others", name, perm)
		}
	}
}
