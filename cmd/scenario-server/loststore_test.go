package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/store/sqlite"
)

// A data directory a server has used (server-id there) whose SQLite file is missing or empty
// is said to be lost (SQLite would start an empty store without a word); a new directory, or
// one with its store, is not.
func TestLostStore(t *testing.T) {
	dir := t.TempDir()
	if why := lostStore(dir); why != "" {
		t.Errorf("a new directory: %q", why)
	}
	if err := os.WriteFile(filepath.Join(dir, serverIDFile), []byte("host-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if why := lostStore(dir); !strings.Contains(why, "is missing") {
		t.Errorf("server-id without a store file: %q", why)
	}
	db := filepath.Join(dir, sqlite.FileName)
	if err := os.WriteFile(db, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if why := lostStore(dir); !strings.Contains(why, "is empty") {
		t.Errorf("an empty store file: %q", why)
	}
	if err := os.WriteFile(db, []byte("SQLite format 3\x00"), 0o600); err != nil {
		t.Fatal(err)
	}
	if why := lostStore(dir); why != "" {
		t.Errorf("a store file: %q", why)
	}
}
