package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/scenario-server/scenario-server/store"
)

// fileReadChunk is how many bytes a file input reads at once; maxFileLine is the longest
// line it reads (its buffer grows to hold a longer line, up to that).
const (
	fileReadChunk = 1 << 20
	maxFileLine   = 64 << 20
)

// fileInput follows a file of events, one JSON object per line, as `tail -F` does: it reads
// the complete lines (ended by '\n') from its byte position and waits for more. A last line
// without its '\n' is read once the line is complete. Blank lines are skipped but counted in
// line numbers. The position is a byte offset (partition 0) in the checkpoint; after a restart
// the line count is found again by counting the lines before it. When the file becomes
// shorter than the position (it was truncated or replaced), reading starts again at its
// start, and a warning is logged; so is another file put in its place while the deployment
// runs (a rename over it, as log rotation does; a replacement while the server is down is not
// noticed). A file that does not exist yet is waited for. The file is
// opened inside the server's source directory (os.OpenInRoot): neither its path nor a
// symbolic link may lead outside it.
type fileInput struct {
	source string
	dir    string // the server's source directory
	rel    string // the path inside it, as the scenario names it
	log    *slog.Logger

	// Owned by the deployment's goroutine.
	pos     int64 // byte offset after the last line pushed
	line    int64 // lines before pos
	readPos int64 // byte offset after the last line read (≥ pos)
	readLn  int64
	size    int64
	buf     []byte
	problem problem
	counted bool        // line matches pos
	seen    os.FileInfo // the file last read, to notice another file under its name
}

func newFileInput(source, dir, rel string, log *slog.Logger) *fileInput {
	if dir == "" {
		dir = "." // the working directory
	}
	return &fileInput{source: source, dir: dir, rel: rel, log: log}
}

func (f *fileInput) restore(positions []store.SourcePosition) error {
	f.pos, f.line, f.counted = 0, 0, true
	for _, p := range positions {
		if p.Partition != 0 || p.Offset < 0 {
			return fmt.Errorf("file source %q: checkpointed position %d/%d is not a byte offset", f.source, p.Partition, p.Offset)
		}
		f.pos = p.Offset
		f.counted = p.Offset == 0
	}
	f.readPos, f.readLn = f.pos, f.line
	return nil
}

// start does nothing: poll reads the file; the deployment polls while it has file inputs.
func (f *fileInput) start(context.Context, func()) {}

func (f *fileInput) stop() {}

// countLines sets f.line to the number of lines before f.pos, once the file can be read.
func (f *fileInput) countLines(file *os.File) error {
	r := io.NewSectionReader(file, 0, f.pos)
	buf := make([]byte, 64<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	f.line, f.readLn, f.counted = n, n, true
	return nil
}

func (f *fileInput) poll() []inputEvent {
	// In the directory, symbolic links included: a link leading outside it is refused.
	file, err := os.OpenInRoot(f.dir, f.rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			f.problem.set(fmt.Sprintf("file %q does not exist (yet) in the source directory %s", f.rel, f.shownDir()))
		} else {
			f.problem.set(fmt.Sprintf("file %q: %v", f.rel, err))
		}
		return nil
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		f.problem.set(fmt.Sprintf("file %q: %v", f.rel, err))
		return nil
	}
	if info.IsDir() {
		f.problem.set(fmt.Sprintf("%q is a directory in the source directory %s: a file source needs a file", f.rel, f.shownDir()))
		return nil
	}
	f.size = info.Size()
	replaced := f.seen != nil && !os.SameFile(f.seen, info)
	f.seen = info
	if f.size < f.pos || replaced {
		// Truncated, or another file under the name (log rotation): start again at its
		// beginning.
		f.log.Warn("the file was truncated or replaced: reading it again from its start",
			"source", f.source, "path", f.rel, "position", f.pos, "size", f.size, "replaced", replaced)
		f.pos, f.line, f.readPos, f.readLn, f.counted = 0, 0, 0, 0, true
	}
	if !f.counted {
		if err := f.countLines(file); err != nil {
			f.problem.set(fmt.Sprintf("file %q: %v", f.rel, err))
			return nil
		}
	}
	f.problem.set("")
	if f.readPos >= f.size {
		return nil
	}
	if len(f.buf) < fileReadChunk {
		f.buf = make([]byte, fileReadChunk)
	}
	var chunk []byte
	end := -1
	for {
		n, err := file.ReadAt(f.buf, f.readPos)
		if err != nil && err != io.EOF {
			f.problem.set(fmt.Sprintf("file %q: %v", f.rel, err))
			return nil
		}
		chunk = f.buf[:n]
		if end = bytes.LastIndexByte(chunk, '\n'); end >= 0 || n < len(f.buf) {
			break
		}
		// One line fills the buffer: grow it to read the whole line.
		if len(f.buf) >= maxFileLine {
			f.problem.set(fmt.Sprintf("file %q: line %d is longer than %d bytes; the source cannot go past it", f.rel, f.readLn+1, maxFileLine))
			return nil
		}
		f.buf = make([]byte, 2*len(f.buf))
	}
	if len(f.buf) > fileReadChunk && len(chunk) < fileReadChunk/2 {
		f.buf = nil // done with the long line: the next poll reads with a chunk-sized buffer
	}
	if end < 0 {
		return nil // the line is not complete yet
	}
	chunk = bytes.Clone(chunk[:end+1]) // the events keep their payloads; f.buf is reused
	var out []inputEvent
	off := f.readPos
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		line := chunk[:i]
		off += int64(i) + 1
		f.readLn++
		chunk = chunk[i+1:]
		if len(bytes.TrimSpace(line)) == 0 {
			// Blank: nothing to push, but the position moves past it.
			out = append(out, inputEvent{skip: true, line: f.readLn, offset: off})
			continue
		}
		out = append(out, inputEvent{payload: line, line: f.readLn, offset: off})
	}
	f.readPos = off
	return out
}

// shownDir is the source directory as messages show it: absolute when it can be.
func (f *fileInput) shownDir() string {
	if abs, err := filepath.Abs(f.dir); err == nil {
		return abs
	}
	return f.dir
}

// idleClock: poll read every complete line the file had, so the file is caught up now.
func (f *fileInput) idleClock(now time.Time) (time.Time, bool) { return now, true }

func (f *fileInput) advance(ev inputEvent) { f.pos, f.line = ev.offset, ev.line }

func (f *fileInput) positions() []store.SourcePosition {
	return []store.SourcePosition{{Source: f.source, Partition: 0, Offset: f.pos}}
}

// status counts bytes: known is the file's size, processed the position.
func (f *fileInput) status() inputStatus {
	return inputStatus{known: max(f.size, f.pos), processed: f.pos, err: f.problem.get()}
}
