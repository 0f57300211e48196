package file

import (
	"os"
	"path/filepath"
	"testing"
)

// A line of a sparse file's hole, 100 GB of zeros, is passed in one poll, the hole skipped
// (SEEK_DATA), not read 16 MiB a poll (before: 6,400 polls, about 20 minutes at one poll
// each 200 ms, for each deployment reading it).
func TestInputSkipsASparseHole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ev.ndjson")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	const size = 100 << 30
	if err := os.Truncate(path, size); err != nil {
		t.Skipf("a sparse file of 100 GB: %v", err)
	}
	in := newInput(t, dir)
	if events, _ := in.Poll(); len(events) != 0 || in.longPos != size {
		t.Fatalf("%d events, read up to %d; want none, up to %d", len(events), in.longPos, int64(size))
	}
}
