//go:build unix

package deploy

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO as a file source's file is refused (opening it would block until a writer comes),
// and the deployment cancels at once (from the second adversarial review).
func TestFileSourceRefusesAFIFO(t *testing.T) {
	st := sqliteStore(t)
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "p.ndjson"), 0o640); err != nil {
		t.Fatal(err)
	}
	g := replaceOnce(t, tumblingGraph(""), `"typ": "http", "parameters": [`, `"typ": "file", "parameters": [{"name": "path", "value": "p.ndjson"},`)
	createScenario(t, st, "f", g)
	r := newRuntime(t, st, func(c *Config) { c.FileSourceDir = dir })
	deploy(t, r, "f", 0)
	waitFor(t, "the FIFO refused", func() bool {
		l, _ := r.Live("f")
		return strings.Contains(l.Sources[0].Error, "not a regular file")
	})
	start := time.Now()
	if _, err := r.Cancel(t.Context(), "f", "", ""); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancel took %v", d)
	}
}
