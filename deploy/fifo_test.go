//go:build unix

package deploy

import (
	"errors"
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
	// Cancel must not wait for a writer: run it aside, so that a hang fails the test instead
	// of stalling it until go test's own timeout.
	cancelled := make(chan error, 1)
	go func() {
		_, err := r.Cancel(t.Context(), "f", "", "")
		cancelled <- err
	}()
	select {
	case err := <-cancelled:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("cancel still waiting after a minute: the deployment is blocked on the FIFO")
	}
	// Nobody holds the FIFO open for reading, nor waits in open(2) for a writer: a writer
	// that does not block is refused with ENXIO.
	w, err := syscall.Open(filepath.Join(dir, "p.ndjson"), syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err == nil {
		syscall.Close(w)
		t.Fatal("the FIFO has a reader after the cancel")
	}
	if !errors.Is(err, syscall.ENXIO) {
		t.Fatalf("opening the FIFO to write: %v, want ENXIO (no reader)", err)
	}
}
