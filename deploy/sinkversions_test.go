package deploy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/scenario-server/scenario-server/store"
)

// commitsOfOneFail is a store that fails every checkpoint commit of deployment failing (0:
// none), as a store that no longer takes that deployment's checkpoints.
type commitsOfOneFail struct {
	store.Store
	failing atomic.Int64
	failed  atomic.Int64
}

func (s *commitsOfOneFail) CommitCheckpoint(ctx context.Context, c store.Checkpoint, results []store.NewSinkResult) (store.Checkpoint, []int64, error) {
	if c.Deployment == s.failing.Load() {
		s.failed.Add(1)
		return store.Checkpoint{}, nil, errInjected
	}
	return s.Store.CommitCheckpoint(ctx, c, results)
}

// copyGraph is an HTTP source whose events' v each write a line to out.ndjson: the lines of
// events processed twice show twice.
const copyGraph = `{"nodes": [
  {"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
    {"name": "timestamp", "expression": {"language": "expr", "expression": "#input.ts"}}]}},
  {"id": "out", "type": "Sink", "ref": {"typ": "file", "parameters": [{"name": "path", "value": "out.ndjson"},
    {"name": "value", "expression": {"language": "expr", "expression": "#input.v"}}]}}
], "edges": [{"from": "in", "to": "out", "edgeType": null}]}`

// A new version deployed over one whose last lines were written but never committed (found
// by review): the new version reads the events after the last committed checkpoint again, and
// its file sink, writing the same file, cuts it back to that checkpoint's size first, as the
// same version deployed again does. Worked by hand: 10 events (v 0 to 9) after the first
// checkpoint (size 0), written by version 1 whose commits fail; version 2 (the same graph
// with its sink node renamed, so no state goes by id) writes each once: "0".."9", 10 lines.
// The file sink took another version's size as someone else's and cut nothing: 20 lines.
func TestNewVersionCutsTheSameFileBack(t *testing.T) {
	st := &commitsOfOneFail{Store: sqliteStore(t)}
	dir := t.TempDir()
	createScenario(t, st, "copy", copyGraph)
	r := newRuntime(t, st, func(c *Config) { c.FileSinkDir = dir })
	d1 := deploy(t, r, "copy", 0)
	st.failing.Store(d1.ID)
	var events [][]byte
	var want []string
	for i := range 10 {
		events = append(events, fmt.Appendf(nil, `{"ts": 1000, "v": %d}`, i))
		want = append(want, fmt.Sprint(i))
	}
	if _, err := r.Ingest(t.Context(), "copy", "in", "", events); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "out.ndjson")
	lines := func() []string {
		b, _ := os.ReadFile(path)
		return strings.Fields(string(b))
	}
	waitFor(t, "version 1's lines written, its commit failed", func() bool { return len(lines()) == 10 && st.failed.Load() > 0 })
	v2 := strings.ReplaceAll(copyGraph, `"out"`, `"written"`)
	if _, err := st.SaveVersion(t.Context(), "copy", 1, store.Draft{Graph: []byte(v2)}); err != nil {
		t.Fatal(err)
	}
	deploy(t, r, "copy", 2)
	waitCommitted(t, r, "copy", 10)
	if got := lines(); fmt.Sprint(got) != fmt.Sprint(want) {
		b, _ := os.ReadFile(path)
		t.Errorf("the file after version 2: %d lines, want %d, each event's once:\n%s", len(got), len(want), bytes.TrimSpace(b))
	}
}
