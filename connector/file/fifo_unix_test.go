//go:build unix

package file

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// openRegular does not wait for a FIFO's other end, reading or writing: it opens it and
// finds it is no regular file. (A FIFO put under a source's name between a look at the name
// and the open held the deployment, its cancel and the server's shutdown for good.)
func TestOpenRegularDoesNotWaitForAFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "p"), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, flag := range []int{os.O_RDONLY, os.O_WRONLY | os.O_APPEND} {
		done := make(chan error, 1)
		go func() {
			f, err := openRegular(root, "p", flag, 0)
			if f != nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			var nr *notRegularError
			// Writing, with no reader, the open itself fails (ENXIO).
			if !errors.As(err, &nr) && !errors.Is(err, syscall.ENXIO) {
				t.Errorf("flag %#x: %v; want a notRegularError or ENXIO", flag, err)
			}
		case <-time.After(10 * time.Second):
			// Give the open its other end, so that the goroutine ends, and fail.
			other := os.O_WRONLY
			if flag != os.O_RDONLY {
				other = os.O_RDONLY
			}
			if f, err := os.OpenFile(filepath.Join(dir, "p"), other|syscall.O_NONBLOCK, 0); err == nil {
				<-done
				f.Close()
			}
			t.Fatalf("flag %#x: the open waited for the FIFO's other end", flag)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "r"), []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := openRegular(root, "r", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	if n, err := f.Read(b); err != nil || string(b[:n]) != "x\n" {
		t.Errorf("read %q, %v", b[:n], err)
	}
	f.Close()
}
