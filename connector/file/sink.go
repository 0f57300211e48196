package file

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/scenario-server/scenario-server/connector"
	"github.com/scenario-server/scenario-server/value"
)

// Output is a file sink: it appends each value as a JSON line to a file inside the server's
// sink directory, exactly once while nothing else writes the file. The lines of a checkpoint
// are appended and synced by Prepare, whose state is the file's size then; Restore cuts the
// file back to the size of the checkpoint restored, so the lines written after it, which the
// deployment writes again as it processes the events after the checkpoint again, are not
// there twice. A sink without a size in the checkpoint (a new sink) starts from its file's
// current size.
//
// The file is opened inside the sink directory through an os.Root, as file sources read
// theirs: neither the path nor a symbolic link on the way may lead outside the directory, so
// a link planted in it cannot make a sink append to (or, restoring a checkpoint, cut back)
// a file elsewhere. Only regular files are written.
type Output struct {
	id, path string
	dir      string // the sink directory; "" is the working directory
	rel      string // the path parameter, relative to dir
	pending  []byte
	lines    int
	// size is the file's size after the last write: what a checkpoint records.
	size int64
	enc  value.JSONEncoder
	// log, when set, hears of a file shorter than its checkpoint (restore).
	log *slog.Logger
}

var _ connector.Output = (*Output)(nil)

// NewOutput returns the Output of file sink node id writing to rel inside dir.
func NewOutput(id, dir, rel string) *Output {
	if dir == "" {
		dir = "."
	}
	return &Output{id: id, dir: dir, rel: rel, path: filepath.Join(dir, rel)}
}

// Path is the file written: the sink directory and the path parameter joined.
func (f *Output) Path() string { return f.path }

// openRoot opens the sink directory, creating it when missing.
func (f *Output) openRoot() (*os.Root, error) {
	if err := os.MkdirAll(f.dir, 0o750); err != nil {
		return nil, err
	}
	return os.OpenRoot(f.dir)
}

// stat returns the file's information inside the sink directory (following symbolic links
// that stay in it); an error wrapping fs.ErrNotExist when there is no file yet, and an error
// when the name is not a regular file or leads outside the directory.
func (f *Output) stat(root *os.Root) (fs.FileInfo, error) {
	info, err := root.Stat(f.rel)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%q in the sink directory is not a regular file (%s): a file sink writes a file", f.rel, info.Mode().Type())
	}
	return info, nil
}

// Write appends v as a JSON line to the pending lines.
func (f *Output) Write(v value.Value) {
	f.pending = append(f.enc.Append(f.pending, v), '\n')
	f.lines++
}

// Pending is the number of lines not written yet.
func (f *Output) Pending() int { return f.lines }

// PendingBytes is the bytes of the lines not written yet.
func (f *Output) PendingBytes() int { return len(f.pending) }

// Restore cuts the file back to the size state records (see Output); others are ignored.
func (f *Output) Restore(_ context.Context, state []byte, _ [][]byte) error {
	size, ok := int64(0), state != nil
	if ok {
		var n int
		size, n = binary.Varint(state)
		if n != len(state) || size < 0 {
			return fmt.Errorf("file sink %q: the checkpoint's size of its file does not decode", f.id)
		}
	}
	if err := f.restore(size, ok); err != nil {
		return fmt.Errorf("file sink %q: %w", f.id, err)
	}
	return nil
}

// SizeState is the state Prepare records for a file of size bytes.
func SizeState(size int64) []byte { return binary.AppendVarint(nil, size) }

func (f *Output) restore(size int64, ok bool) error {
	root, err := f.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	info, err := f.stat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f.size = 0
		f.missing(size, ok)
		return nil
	case err != nil:
		return err
	}
	f.size = info.Size()
	if info.Size() < size {
		f.missing(size, ok)
	}
	if !ok || info.Size() <= size {
		return nil
	}
	file, err := openRegular(root, f.rel, os.O_WRONLY, 0)
	if err == nil {
		err = errors.Join(file.Truncate(size), file.Close())
	}
	if err != nil {
		return fmt.Errorf("cutting %s back to its checkpointed size: %w", f.path, err)
	}
	f.size = size
	return nil
}

// missing logs that the file holds less than the checkpoint restored says it did, size bytes
// (ok: it says): the lines before are lost to the file's readers, and the sink appends after
// what is there (a data directory restored from a backup without its sinks, a file moved or
// cut by hand). A restore used to go on without a word.
func (f *Output) missing(size int64, ok bool) {
	if !ok || size == 0 || f.log == nil {
		return
	}
	f.log.Warn("a file sink's file holds less than at the checkpoint restored: the lines written before are missing from it, and new lines follow what is there (restored without the sink directory's files, or the file was moved or cut)",
		"sink", f.id, "path", f.path, "checkpointBytes", size, "fileBytes", f.size)
}

// Prepare appends the pending lines to the file and syncs it, and returns the file's size
// (SizeState). A file that fails is cut back to its previous size and keeps its lines for
// the next checkpoint.
func (f *Output) Prepare(context.Context) ([]byte, error) {
	if err := f.write(); err != nil {
		return nil, fmt.Errorf("file sink %q: %w", f.id, err)
	}
	return SizeState(f.size), nil
}

func (f *Output) write() error {
	if len(f.pending) == 0 {
		return nil
	}
	root, err := f.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	if dir := filepath.Dir(f.rel); dir != "." {
		if err := root.MkdirAll(dir, 0o750); err != nil {
			return err
		}
	}
	// Stat first, for the error's words; the open checks the file it opens.
	if _, err := f.stat(root); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	file, err := openRegular(root, f.rel, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		var nr *notRegularError
		if errors.As(err, &nr) {
			return fmt.Errorf("%q in the sink directory is not a regular file (%s): a file sink writes a file", f.rel, nr.mode)
		}
		return err
	}
	_, err = file.Write(f.pending)
	if err == nil {
		err = file.Sync()
	}
	var info os.FileInfo
	if err == nil {
		info, err = file.Stat()
	}
	if err != nil {
		err = errors.Join(err, file.Truncate(f.size))
		file.Close()
		return err
	}
	if err := file.Close(); err != nil {
		return err
	}
	f.size = info.Size()
	f.pending, f.lines = connector.EmptyBuffer(f.pending), 0
	return nil
}

// Commit does nothing: the lines were written by Prepare, and the checkpoint records them.
func (f *Output) Commit(context.Context) {}

// Abort does nothing: the lines written stay, and the next checkpoint records them (a
// restore from the previous one cuts them off).
func (f *Output) Abort(context.Context) {}

// Close does nothing: the file is open only while written.
func (f *Output) Close() {}
