package file

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/value"
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

	ctx := t.Context()
	link, sub, alias := NewOutput("link", dir, "link.txt"), NewOutput("sub", dir, "sub/new.txt"), NewOutput("alias", dir, "alias.txt")
	for _, o := range []*Output{link, sub, alias} {
		o.Write(value.Int(12345)) // the line "12345\n"
	}
	if _, err := link.Prepare(ctx); err == nil {
		t.Error("writing through a link to a file outside: no error")
	}
	if _, err := sub.Prepare(ctx); err == nil {
		t.Error("writing through a linked directory outside: no error")
	}
	outsideUnchanged("write")
	if link.Pending() != 1 {
		t.Errorf("the refused write dropped its line: %d pending", link.Pending())
	}
	state, err := alias.Prepare(ctx)
	if err != nil {
		t.Fatalf("writing through a link inside: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "real.txt")); err != nil || string(b) != "12345\n" {
		t.Errorf("real.txt holds %q, %v", b, err)
	}
	if !bytes.Equal(state, SizeState(6)) || alias.Pending() != 0 {
		t.Errorf("state after writing 6 bytes: %x, %d pending", state, alias.Pending())
	}

	// A restore after a crash would cut the file back to the checkpoint's size (0 here, "keep\n"
	// is 5 bytes): refused outside, done inside.
	if err := NewOutput("link", dir, "link.txt").Restore(ctx, SizeState(0), nil); err == nil {
		t.Error("restoring through a link to a file outside: no error")
	}
	outsideUnchanged("restore")
	if err := NewOutput("alias", dir, "alias.txt").Restore(ctx, SizeState(2), nil); err != nil {
		t.Fatalf("restoring through a link inside: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "real.txt")); string(b) != "12" {
		t.Errorf("real.txt cut back to %q, want %q", b, "12")
	}
}

// TestFileSinkCreatesItsDirectories: a sink directory and subdirectories that do not exist yet
// are created, inside the sink directory.
func TestFileSinkCreatesItsDirectories(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sinks")
	o := NewOutput("out", dir, "a/b/out.ndjson")
	if err := o.Restore(t.Context(), nil, nil); err != nil {
		t.Fatal(err)
	}
	o.Write(value.NewRecord(nil, nil)) // {}
	state, err := o.Prepare(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a", "b", "out.ndjson")); err != nil || string(b) != "{}\n" {
		t.Errorf("out.ndjson holds %q, %v", b, err)
	}
	if !bytes.Equal(state, SizeState(3)) {
		t.Errorf("state %x, want the size 3", state)
	}
}

// A file sink lets go of a buffer grown past 1 MiB once its lines are written, and keeps a
// smaller one: before, it kept the capacity of its largest checkpoint for as long as its
// deployment ran (36 file sinks of one 6.5 MB event each, in 26 deployments, ended the server
// out of memory, hostile round).
func TestFileSinkLetsGoOfLargeBuffers(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	f := NewOutput("out", dir, "out.txt")
	if err := f.Restore(ctx, SizeState(0), nil); err != nil {
		t.Fatal(err)
	}
	f.Write(value.String(string(bytes.Repeat([]byte("x"), 2<<20))))
	if _, err := f.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if c := cap(f.pending); c != 0 {
		t.Errorf("after a line of 2 MiB was written, the sink keeps a buffer of %d bytes; want none", c)
	}
	f.Write(value.Int(1))
	if _, err := f.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if c := cap(f.pending); c == 0 {
		t.Error("after a small line was written, the sink let go of its buffer; want it kept")
	}
	b, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	if err != nil || len(b) != 2<<20+2+1+2 {
		t.Errorf("the file holds %d bytes (%v); want the 2 MiB string's line and 1's", len(b), err)
	}
}

// A restore that finds the sink's file shorter than its checkpoint says (missing, or cut)
// warns: the lines written before are missing from the file (a data directory restored
// without its sinks/ lost 841 results without a word, a new-user round). A file as long or
// longer is cut back without a warning, and a sink new to the checkpoint says nothing.
func TestFileSinkShorterThanItsCheckpointWarns(t *testing.T) {
	dir := t.TempDir()
	var logged bytes.Buffer
	restore := func(content *string, state []byte) string {
		t.Helper()
		logged.Reset()
		path := filepath.Join(dir, "out.ndjson")
		os.Remove(path)
		if content != nil {
			if err := os.WriteFile(path, []byte(*content), 0o640); err != nil {
				t.Fatal(err)
			}
		}
		out := NewOutput("out", dir, "out.ndjson")
		out.log = slog.New(slog.NewTextHandler(&logged, nil))
		if err := out.Restore(t.Context(), state, nil); err != nil {
			t.Fatal(err)
		}
		return logged.String()
	}
	ten, twenty := "0123456789", "01234567890123456789"
	if l := restore(nil, SizeState(20)); !strings.Contains(l, "holds less than at the checkpoint") || !strings.Contains(l, "checkpointBytes=20 fileBytes=0") {
		t.Errorf("a missing file: %q", l)
	}
	if l := restore(&ten, SizeState(20)); !strings.Contains(l, "checkpointBytes=20 fileBytes=10") {
		t.Errorf("a file of 10 bytes for 20: %q", l)
	}
	for _, c := range []struct {
		content *string
		state   []byte
	}{{&twenty, SizeState(20)}, {&twenty, SizeState(10)}, {nil, nil}, {&ten, nil}, {nil, SizeState(0)}} {
		if l := restore(c.content, c.state); l != "" {
			t.Errorf("content %v, state %v: %q; want nothing logged", c.content, c.state, l)
		}
	}
}
