package deploy

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/scenario-server/scenario-server/store"
)

// TestFileSinkStaysInsideDirectory: with real files and symbolic links, a file sink writes
// and cuts back only files inside its directory. A link to a file outside, or a linked
// directory leading outside, makes the write (and the restore after a crash) fail and leaves
// the outside file as it was; a link that stays inside is followed.
func TestFileSinkStaysInsideDirectory(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "target.txt")
	if err := os.WriteFile(target, []byte("keep\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct{ old, new string }{
		{target, filepath.Join(dir, "link.txt")},
		{outside, filepath.Join(dir, "sub")},
		{"real.txt", filepath.Join(dir, "alias.txt")}, // relative: stays inside
	} {
		if err := os.Symlink(l.old, l.new); err != nil {
			t.Skipf("symbolic links: %v", err)
		}
	}
	outsideUnchanged := func(what string) {
		t.Helper()
		if b, err := os.ReadFile(target); err != nil || string(b) != "keep\n" {
			t.Errorf("%s: the file outside holds %q, %v", what, b, err)
		}
		if _, err := os.Stat(filepath.Join(outside, "new.txt")); !os.IsNotExist(err) {
			t.Errorf("%s: a file was created outside: %v", what, err)
		}
	}

	s := newSinks(nil)
	s.addFile("link", dir, "link.txt", filepath.Join(dir, "link.txt"))
	s.addFile("sub", dir, "sub/new.txt", filepath.Join(dir, "sub", "new.txt"))
	s.addFile("alias", dir, "alias.txt", filepath.Join(dir, "alias.txt"))
	for _, f := range s.files {
		f.pending = append(f.pending, "line\n"...)
	}
	if err := s.files["link"].write(); err == nil {
		t.Error("writing through a link to a file outside: no error")
	}
	if err := s.files["sub"].write(); err == nil {
		t.Error("writing through a linked directory outside: no error")
	}
	outsideUnchanged("write")
	if len(s.files["link"].pending) != 5 {
		t.Errorf("the refused write dropped its lines: %q pending", s.files["link"].pending)
	}
	if err := s.files["alias"].write(); err != nil {
		t.Fatalf("writing through a link inside: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "real.txt")); err != nil || string(b) != "line\n" {
		t.Errorf("real.txt holds %q, %v", b, err)
	}

	// A restore after a crash would cut the file back to the checkpoint's size (0 here, "keep\n"
	// is 5 bytes): refused outside, done inside.
	if err := s.restoreFiles(map[string]int64{"link": 0}); err == nil {
		t.Error("restoring through a link to a file outside: no error")
	}
	outsideUnchanged("restore")
	inside := newSinks(nil)
	inside.addFile("alias", dir, "alias.txt", filepath.Join(dir, "alias.txt"))
	if err := inside.restoreFiles(map[string]int64{"alias": 2}); err != nil {
		t.Fatalf("restoring through a link inside: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "real.txt")); string(b) != "li" {
		t.Errorf("real.txt cut back to %q, want %q", b, "li")
	}
}

// TestFileSinkCreatesItsDirectories: a sink directory and subdirectories that do not exist yet
// are created, inside the sink directory.
func TestFileSinkCreatesItsDirectories(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sinks")
	s := newSinks(nil)
	s.addFile("out", dir, "a/b/out.ndjson", filepath.Join(dir, "a", "b", "out.ndjson"))
	s.files["out"].pending = []byte("{}\n")
	if err := s.writeFiles(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a", "b", "out.ndjson")); err != nil || string(b) != "{}\n" {
		t.Errorf("out.ndjson holds %q, %v", b, err)
	}
	if s.files["out"].size != 3 {
		t.Errorf("size %d, want 3", s.files["out"].size)
	}
}

// TestCanceledDeploymentKeepsItsFile is the case with real files, on SQLite and
// PostgreSQL: a writes 500 events' windows to shared.txt and is canceled; b, writing the same
// file, is refused naming a's canceled deployment (before, b ran and a's redeploy then cut the
// file back to a's checkpoint, deleting b's lines); a's redeploy resumes with its file whole.
func TestCanceledDeploymentKeepsItsFile(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]newStoreFunc{"SQLite": sqliteStore, "PostgreSQL": postgresStore} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			createScenario(t, st, "a", fileSinkGraph("shared.txt"))
			createScenario(t, st, "b", fileSinkGraph("shared.txt"))
			dir := t.TempDir()
			r := newRuntime(t, st, func(c *Config) { c.FileSinkDir = dir })
			da := deploy(t, r, "a", 0)
			ingestAll(t, r, "a", records(500), 0, 100)
			waitCommitted(t, r, "a", 500)
			if _, err := r.Cancel(t.Context(), "a", "ann", ""); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "shared.txt")
			before, err := os.ReadFile(path)
			if err != nil || len(before) == 0 {
				t.Fatalf("a's file: %q, %v", before, err)
			}

			_, err = r.Deploy(t.Context(), DeployRequest{Scenario: "b"})
			var inUse *SinkPathInUseError
			if !errors.As(err, &inUse) || inUse.OtherDeployment != da.ID || inUse.OtherStatus != store.StatusCanceled || inUse.OtherSink != "out" {
				t.Fatalf("deploying b onto a's file: %v", err)
			}
			if list, _ := st.ListDeployments(t.Context(), "b"); len(list) != 0 {
				t.Errorf("the refused deploy created a deployment: %+v", list)
			}
			deploy(t, r, "a", 0)
			waitFor(t, "a running", func() bool { l, ok := r.Live("a"); return ok && l.Phase == PhaseRunning })
			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Errorf("a's file changed at its redeploy: %d bytes, had %d", len(after), len(before))
			}
		})
	}
}
