package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/auth"
	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/sqlite"
)

// backup copies a store a server has open: the scenario and the token written before it are
// in the copy (in the write-ahead log, as a running server leaves them), the scenario written
// after it is not, and the server's id and session key come along; a second backup into the
// same directory, a data directory without a store, a PostgreSQL store and a missing --to are
// refused (new-user round 136: the README said nothing of backups, and a copy of the .db
// file alone lost the admin token).
func TestBackup(t *testing.T) {
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	graph := []byte(`{"nodes": [{"id": "in", "type": "Source", "ref": {"typ": "http"}}], "edges": []}`)
	if _, err := st.CreateScenario(t.Context(), "kept", store.Draft{Graph: graph, Author: "anna"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.CreateToken(t.Context(), st, "admin", auth.Admin, 0); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{serverIDFile: "host/0123\n", sessionKeyFile: "secret-key"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The deployed file sinks' files, in the data directory's sinks/, are copied; the file
	// sources' in sources/ are not (the server's inputs, not its state).
	files := map[string]string{"sinks/out/totals.ndjson": "{\"n\":1}\n{\"n\":2}\n", "sources/in/flights.jsonl": "{\"a\":1}\n"}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	to := filepath.Join(t.TempDir(), "copy")
	env := func(k string) string { return "" }
	var stdout, stderr bytes.Buffer
	if err := runCommand(t.Context(), []string{"backup", "--data-dir", dir, "--to", to}, env, nil, &stdout, &stderr); err != nil {
		t.Fatalf("backup: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "server-id, session-key") || !strings.Contains(stdout.String(), "--data-dir "+to) {
		t.Errorf("backup said %q", stdout.String())
	}
	if _, err := st.CreateScenario(t.Context(), "later", store.Draft{Graph: graph, Author: "anna"}); err != nil {
		t.Fatal(err)
	}

	cp, err := sqlite.Open(t.Context(), to)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	if _, err := cp.GetScenario(t.Context(), "kept"); err != nil {
		t.Errorf("the scenario written before the backup: %v", err)
	}
	if _, err := cp.GetScenario(t.Context(), "later"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the scenario written after the backup: %v, want not found", err)
	}
	if tokens, err := cp.ListTokens(t.Context()); err != nil || len(tokens) != 1 || tokens[0].Name != "admin" {
		t.Errorf("tokens in the copy: %+v, %v", tokens, err)
	}
	for name, want := range map[string]string{serverIDFile: "host/0123\n", sessionKeyFile: "secret-key"} {
		if b, err := os.ReadFile(filepath.Join(to, name)); err != nil || string(b) != want {
			t.Errorf("%s in the copy: %q, %v", name, b, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(to, sqlite.FileName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the copy's mode: %v, %v", fi.Mode(), err)
	}
	if b, err := os.ReadFile(filepath.Join(to, "sinks/out/totals.ndjson")); err != nil || string(b) != files["sinks/out/totals.ndjson"] {
		t.Errorf("the sink's file in the copy: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(to, "sources")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the copy has sources/ (%v); want none", err)
	}
	if !strings.Contains(stdout.String(), "and the files of "+filepath.Join(dir, "sinks")+": 1 file, 16 bytes") {
		t.Errorf("backup said %q; want the sinks' 1 file of 16 bytes", stdout.String())
	}
	// With --sink-dir elsewhere, given as a link to it, its files go into the copy's sinks/,
	// and the backup says to start the copy with --sink-dir there.
	target, to2 := t.TempDir(), filepath.Join(t.TempDir(), "copy2")
	elsewhere := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(target, elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "x.ndjson"), []byte("{}\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if err := runCommand(t.Context(), []string{"backup", "--data-dir", dir, "--sink-dir", elsewhere, "--to", to2}, env, nil, &stdout, &stderr); err != nil {
		t.Fatalf("backup: %v\n%s", err, stderr.String())
	}
	if b, err := os.ReadFile(filepath.Join(to2, "sinks", "x.ndjson")); err != nil || string(b) != "{}\n" {
		t.Errorf("the custom sink directory's file in the copy: %q, %v", b, err)
	}
	if !strings.Contains(stdout.String(), "start the copy with --sink-dir "+filepath.Join(to2, "sinks")) {
		t.Errorf("backup said %q", stdout.String())
	}

	// A backup that fails leaves no directory behind, nor any file that looks like a store.
	nostore, failed := t.TempDir(), filepath.Join(t.TempDir(), "x")
	defer func() {
		if _, err := os.Stat(failed); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the failed backup's directory: %v, want none", err)
		}
		if _, err := os.Stat(filepath.Join(to, sqlite.FileName+".partial")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the backup's partial file: %v, want none", err)
		}
	}()
	for _, tc := range []struct {
		args  []string
		env   func(string) string
		usage bool
		want  string
	}{
		{[]string{"--data-dir", dir, "--to", to}, env, false, "is not empty"},
		{[]string{"--data-dir", nostore, "--to", failed}, env, false, "no store at"},
		{[]string{"--data-dir", dir, "--to", filepath.Join(t.TempDir(), "y")}, func(k string) string {
			if k == envDatabaseURL {
				return "postgres://db/x"
			}
			return ""
		}, true, "back it up with pg_dump"},
		{[]string{"--data-dir", dir}, env, true, "backup needs --to DIR"},
	} {
		err := runCommand(t.Context(), append([]string{"backup"}, tc.args...), tc.env, nil, &stdout, &stderr)
		if err == nil || errors.Is(err, errUsage) != tc.usage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("backup %q: %v; want %q (usage %v)", tc.args, err, tc.want, tc.usage)
		}
	}
}
