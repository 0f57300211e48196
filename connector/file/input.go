package file

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/scenario-server/scenario-server/connector"
	"github.com/scenario-server/scenario-server/engine"
)

// PollInterval is how often an idle deployment polls a file input for new lines (its
// connector's PollEvery): a file does not wake the deployment.
const PollInterval = 200 * time.Millisecond

// fileReadChunk is how many bytes a file input reads at once; maxFileLine is the longest
// line it reads, the engine's (its buffer grows to hold a longer line, up to that, and is
// let go once the line is read). A longer line is a per-event error at the source (its
// first longLineHeadBytes in the dead letter), as the engine makes of one: the input reads on
// to its end, at most maxFileLine bytes a poll, without keeping them.
const (
	fileReadChunk     = 1 << 20
	maxFileLine       = engine.MaxLineBytes
	longLineHeadBytes = 1 << 10
	// markBytes is how many bytes before a position tell whether the file was rewritten in
	// place, or is a copy (see Input): 4 KiB (16 before: fixed-width lines ending alike, a
	// rotated file with the same first 4 KiB was taken for a copy; review 148).
	markBytes = 4 << 10
	// oldMarkBytes is how many identities written before the fingerprint kept (raw).
	oldMarkBytes = 16
	// headBytes is how many of a file's first bytes its fingerprint covers (see Input), as
	// Filebeat's fingerprint file identity does (it covers 1 KiB).
	headBytes = 4 << 10
)

// Input follows a file of events, one JSON object per line, as `tail -F` does: it reads
// the complete lines (ended by '\n') from its byte position and waits for more. A last line
// without its '\n' is read once the line is complete. Blank lines are skipped but counted in
// line numbers. The position is a byte offset (partition 0) in the checkpoint; after a restart
// the line count is found again by counting the lines before it.
//
// The file stays open between reads. When another file takes its name (a rename over it, or
// the file deleted and written again, as log rotation does), the open one is read to its end
// first, its last line too even without a '\n', and then the new file from its start. When
// the open file becomes shorter than the position (truncated), it is read again from its
// start. So does a file rewritten in place, as logrotate's copytruncate does (copied, then
// truncated and written again): a truncation followed, before the next poll, by new lines
// past the position does not make the file shorter than it, so the input also remembers the
// markBytes bytes (4 KiB) before the position it read to, and the file's first bytes
// (headBytes at most) as it read them, and reads both again each poll; when either changed,
// the file is read again from its start. A file rewritten with the same bytes in both places
// is not told from one appended to. Both are logged. A file that does not exist yet is waited for. Only
// regular files are read (not a directory, a FIFO or a device), and only inside the server's
// source directory (os.Root): neither the path nor a symbolic link may lead outside it.
//
// The checkpoint's identity says which file the position is in: its device and inode
// (fileID), the SHA-256 of its first min(position, headBytes) bytes (its fingerprint), and
// the SHA-256 of its markBytes bytes before the position. After a restart, a file under the
// name with the same device and inode goes on from the position unless either differs (it
// was rewritten in place meanwhile); one with another device and inode goes on from the
// position when it is at least that long and has the same two (a copy: the data directory
// restored on another machine with its sources, or the file copied over), and is read from
// its start otherwise (rotated or replaced meanwhile). Before, a copy was always read from
// its start, its events processed twice. Identities written before (device and inode, then
// the 16 bytes before the position) are read as they were. Only the bytes between the first
// 4 KiB and the last 4 KiB before the position are not compared: a rotated file alike in both
// is taken for a copy, as Filebeat's fingerprint identity takes a file alike in its first KiB.
type Input struct {
	source string
	dir    string // the server's source directory
	rel    string // the path inside it, as the scenario names it
	log    *slog.Logger

	// Owned by the deployment's goroutine.
	file   *os.File // the file read, open between polls; nil before it exists
	fileID []byte   // fileID of file
	// restoredID is the identity of the file the position is in while none is open (restored,
	// or replaced and closed): its fileID and, when restored, the bytes before the position;
	// nil when unknown.
	restoredID []byte
	// mark is the file's bytes before readPos as they were read (at most markBytes; nil at 0).
	mark []byte
	// head is the file's first bytes as they were read (at most headBytes), when read from
	// its start; fp is the fingerprint of its first fpLen bytes (fingerprint), fpLen -1 when
	// none was worked out for this head.
	head  []byte
	fp    []byte
	fpLen int64
	cmp   []byte // sameBytes's buffer
	// chunk is what the last read gave, from chunkStart, with chunkMark the bytes before it
	// as read: while its lines are being pushed (pos < readPos) the bytes before pos come
	// from it (the events' payloads hold it anyway); nil once they are.
	chunk      []byte
	chunkStart int64
	chunkMark  []byte
	pos        int64 // byte offset after the last line pushed
	line       int64 // lines before pos
	readPos    int64 // byte offset after the last line read (≥ pos)
	readLn     int64
	size       int64
	buf        []byte
	health     connector.Health
	counted    bool // line matches pos
	// A line longer than maxFileLine from readPos, being read past: its first bytes, and
	// where the reading got to (0: no such line).
	longHead []byte
	longPos  int64
}

// NewInput returns the Input of file source node source, reading rel inside dir ("": the
// working directory).
func NewInput(source, dir, rel string, log *slog.Logger) *Input {
	if dir == "" {
		dir = "." // the working directory
	}
	f := &Input{source: source, dir: dir, rel: rel, log: log}
	f.health.Logger = log.With("source", source, "path", rel)
	return f
}

// Identity is the fileID of the file the position is in: the open file, the restored one
// until the file is opened, or a replaced one, closed, until its last lines are pushed; nil
// at position 0 (true of any file). The open file's is followed by its fingerprint and the
// SHA-256 of the bytes before the position (at most markBytes), as read; when the
// fingerprint cannot be read, by the last 16 of those bytes, as before.
func (f *Input) Identity() []byte {
	switch {
	case f.pos == 0:
		return nil
	case f.file != nil:
		if f.fileID == nil {
			return nil
		}
		// The bytes as they were read: read again now, a file rewritten since the last poll
		// would give the new file's, and a restore would take it for the same.
		mark := f.markAt(f.pos)
		fp := f.fingerprint(f.pos)
		if fp == nil || mark == nil {
			return append(bytes.Clone(f.fileID), mark[max(len(mark)-oldMarkBytes, 0):]...)
		}
		tail := sha256.Sum256(mark)
		return append(append(bytes.Clone(f.fileID), fp...), tail[:]...)
	default:
		return f.restoredID
	}
}

// fingerprint is the SHA-256 of the open file's first min(pos, headBytes) bytes: as they
// were read (head), or, when they were not read from its start (restored), as the file has
// them now; nil when they cannot be read (the identity then has none, as before it had).
func (f *Input) fingerprint(pos int64) []byte {
	n := min(pos, headBytes)
	if int64(len(f.head)) < n {
		b := make([]byte, n)
		if k, _ := f.file.ReadAt(b, 0); int64(k) != n {
			return nil
		}
		f.head, f.fpLen = b, -1
	}
	if f.fpLen != n {
		sum := sha256.Sum256(f.head[:n])
		f.fp, f.fpLen = sum[:], n
	}
	return f.fp
}

// markAt is the open file's bytes before pos (at most markBytes) as they were read: read
// again now, a file rewritten since the last poll would give the new file's, and a restore
// would take it for the same. Nil when they cannot be read.
func (f *Input) markAt(pos int64) []byte {
	if pos == f.readPos && f.mark != nil {
		return f.mark
	}
	if f.chunk != nil && pos >= f.chunkStart && pos-f.chunkStart <= int64(len(f.chunk)) {
		if m := markAfter(f.chunkMark, f.chunk[:pos-f.chunkStart]); len(m) == int(min(pos, markBytes)) {
			return m
		}
	}
	return f.before(pos)
}

// sameBytes reports whether the open file has want at off, read into a buffer kept for it
// (each poll compares 8 KiB at most).
func (f *Input) sameBytes(off int64, want []byte) bool {
	if cap(f.cmp) < len(want) {
		f.cmp = make([]byte, len(want))
	}
	b := f.cmp[:len(want)]
	k, _ := f.file.ReadAt(b, off)
	return k == len(want) && bytes.Equal(b, want)
}

// checkpointed is what a checkpoint's identity says of its file after the fileID: its
// fingerprint and the SHA-256 of the bytes before the position, or (written before the
// fingerprint) those bytes, the last 16 at most, raw.
type checkpointed struct {
	fp, tail, raw []byte
}

// splitIdentity reads rest, a checkpoint's identity after the fileID.
func splitIdentity(rest []byte) checkpointed {
	switch {
	case len(rest) == 2*sha256.Size:
		return checkpointed{fp: rest[:sha256.Size], tail: rest[sha256.Size:]}
	case len(rest) >= sha256.Size: // (a fingerprint then the raw bytes: never released)
		return checkpointed{fp: rest[:sha256.Size], raw: rest[sha256.Size:]}
	}
	return checkpointed{raw: rest}
}

// sameAt reports whether the open file, at least pos long, has what c says before pos: its
// fingerprint (when c has one) and its bytes before pos.
func (f *Input) sameAt(c checkpointed, pos int64) bool {
	if f.size < pos || c.fp != nil && !bytes.Equal(f.fingerprint(pos), c.fp) {
		return false
	}
	if c.tail != nil {
		b := f.before(pos)
		sum := sha256.Sum256(b)
		return b != nil && bytes.Equal(sum[:], c.tail)
	}
	return f.sameBytes(pos-int64(len(c.raw)), c.raw)
}

// before returns the open file's bytes before at (at most markBytes), nil when they cannot
// be read.
func (f *Input) before(at int64) []byte {
	n := min(at, markBytes)
	b := make([]byte, n)
	if k, _ := f.file.ReadAt(b, at-n); int64(k) != n {
		return nil
	}
	return b
}

func (f *Input) Restore(positions []connector.Position, identity []byte) error {
	f.restoredID, f.mark, f.chunk, f.chunkMark = identity, nil, nil, nil
	f.head, f.fpLen = nil, -1
	f.pos, f.line, f.counted = 0, 0, true
	f.longHead, f.longPos = nil, 0
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

// Start does nothing: poll reads the file; the deployment polls it every PollInterval.
func (f *Input) Start(context.Context, func()) {}

func (f *Input) Stop() {
	if f.file != nil {
		_ = f.file.Close()
		f.file = nil
	}
}

// open opens the file the name now gives, inside the source directory, if it is a regular
// file; nil (and the problem set) otherwise.
func (f *Input) open() *os.File {
	root, err := os.OpenRoot(f.dir)
	if err != nil {
		f.health.Set(fmt.Sprintf("the source directory %s: %v", f.shownDir(), err))
		return nil
	}
	defer root.Close()
	file, err := openRegular(root, f.rel, os.O_RDONLY, 0)
	if err != nil {
		var nr *notRegularError
		if errors.As(err, &nr) {
			f.health.Set(fmt.Sprintf("%q in the source directory %s is not a regular file (%s): a file source reads a file", f.rel, f.shownDir(), nr.mode))
		} else if errors.Is(err, fs.ErrNotExist) {
			f.health.Set(fmt.Sprintf("file %q does not exist (yet) in the source directory %s", f.rel, f.shownDir()))
		} else if strings.Contains(err.Error(), "path escapes from parent") { // os.Root's error
			f.health.Set(fmt.Sprintf("%q leads out of the source directory %s (through a symbolic link): a file source reads only inside it", f.rel, f.shownDir()))
		} else {
			f.health.Set(fmt.Sprintf("file %q: %v", f.rel, err))
		}
		return nil
	}
	return file
}

// renamed says whether the name now gives another file than the open one (or none).
func (f *Input) renamed() bool {
	root, err := os.OpenRoot(f.dir)
	if err != nil {
		return false
	}
	defer root.Close()
	now, err := root.Stat(f.rel)
	if err != nil {
		return false // gone: keep the open file until another takes the name
	}
	open, err := f.file.Stat()
	return err == nil && !os.SameFile(open, now)
}

// Poll reads the complete lines written since the last poll. reset: the position went back
// to the start of the file (a truncation, another file under the name) without events.
func (f *Input) Poll() ([]connector.Event, bool) {
	reset := false
	if f.file == nil {
		if f.file = f.open(); f.file == nil {
			return nil, false
		}
		f.fileID = nil
	}
	info, err := f.file.Stat()
	if err != nil {
		f.health.Set(fmt.Sprintf("file %q: %v", f.rel, err))
		return nil, false
	}
	f.size = info.Size()
	if f.fileID == nil {
		f.fileID = fileID(info)
		restored := f.restoredID
		f.restoredID = nil
		if restored != nil && f.fileID != nil && f.pos > 0 {
			id := restored[:min(len(restored), len(f.fileID))]
			c := splitIdentity(restored[len(id):])
			switch {
			case bytes.Equal(id, f.fileID) && f.size < f.pos:
				// truncated: read again from its start below
			case bytes.Equal(id, f.fileID) && (c.fp != nil || c.tail != nil) && !f.sameAt(c, f.pos):
				f.log.Warn("the file was rewritten in place while the server was down (its first bytes, or those before the position, are not those read): reading it again from its start",
					"source", f.source, "path", f.rel, "position", f.pos)
				f.rewind()
				reset = true
			case bytes.Equal(id, f.fileID):
				if len(c.raw) > 0 {
					f.mark = c.raw // checked below as the bytes before readPos (= pos)
				} else if c.tail != nil {
					f.mark = f.before(f.pos) // (as the checkpoint's: just compared)
				}
			case c.fp != nil && f.sameAt(c, f.pos):
				f.log.Info("the file under the name has another device and inode than the checkpointed one, but the same first bytes and bytes before the position: a copy of it (a data directory restored elsewhere, a file copied over); going on from the position",
					"source", f.source, "path", f.rel, "position", f.pos)
				f.mark = f.before(f.pos)
			default:
				f.log.Warn("another file than the checkpointed one has the name: reading it from its start",
					"source", f.source, "path", f.rel, "position", f.pos)
				f.rewind()
				reset = true
			}
		}
	}
	if f.size < f.pos {
		f.log.Warn("the file was truncated: reading it again from its start",
			"source", f.source, "path", f.rel, "position", f.pos, "size", f.size)
		f.rewind()
		reset = true
	} else if f.mark != nil && (!f.sameBytes(f.readPos-int64(len(f.mark)), f.mark) || len(f.head) > 0 && !f.sameBytes(0, f.head)) {
		f.log.Warn("the file was rewritten in place (as copytruncate does): reading it again from its start",
			"source", f.source, "path", f.rel, "position", f.pos)
		f.rewind()
		reset = true
	}
	if !f.counted {
		if err := f.countLines(); err != nil {
			f.health.Set(fmt.Sprintf("file %q: %v", f.rel, err))
			return nil, reset
		}
	}
	f.health.Set("")
	events, ok := f.read(false)
	if !ok || len(events) > 0 || !f.renamed() {
		return events, reset
	}
	// Another file has the name: finish the open one, its unended last line included, then
	// go on with the new one from its start.
	events, _ = f.read(true)
	f.log.Warn("another file took the name: reading it from its start",
		"source", f.source, "path", f.rel, "read", f.readPos)
	_ = f.file.Close()
	// Until the events are pushed (the last one's Advance rewinds), the position is in the
	// closed file: a checkpoint meanwhile keeps its identity (Identity reads restoredID).
	f.file, f.restoredID, f.mark, f.chunk, f.chunkMark = nil, f.fileID, nil, nil, nil
	if len(events) > 0 {
		events[len(events)-1].Restart = true
	} else {
		f.rewind()
		reset = true
	}
	return events, reset
}

// rewind moves the positions to the start of the file.
func (f *Input) rewind() {
	f.pos, f.line, f.readPos, f.readLn, f.counted = 0, 0, 0, 0, true
	f.longHead, f.longPos, f.mark, f.chunk, f.chunkMark = nil, 0, nil, nil, nil
	f.head, f.fpLen = nil, -1
}

// read returns the lines from readPos to the file's last '\n' (to its end when final). ok is
// false when the file cannot be read (the problem is set).
func (f *Input) read(final bool) ([]connector.Event, bool) {
	if f.longPos > 0 {
		return f.readLong(final)
	}
	if f.readPos >= f.size && !final {
		return nil, true
	}
	if len(f.buf) < fileReadChunk {
		f.buf = make([]byte, fileReadChunk)
	}
	var chunk []byte
	end := -1
	synthetic := false // a '\n' added after the file's unended last line
	for {
		n, err := f.file.ReadAt(f.buf, f.readPos)
		if err != nil && err != io.EOF {
			f.health.Set(fmt.Sprintf("file %q: %v", f.rel, err))
			return nil, false
		}
		chunk = f.buf[:n]
		if final && n < len(f.buf) && n > 0 && chunk[n-1] != '\n' {
			chunk = append(chunk, '\n') // the last line of a file no longer written
			synthetic = true
		}
		if end = bytes.LastIndexByte(chunk, '\n'); end >= 0 || n < len(f.buf) {
			break
		}
		// One line fills the buffer: grow it to read the whole line.
		if len(f.buf) >= maxFileLine {
			// Too long: read past it, keeping its head for the dead letter.
			f.longHead = bytes.Clone(f.buf[:longLineHeadBytes])
			f.longPos = f.readPos + int64(len(f.buf))
			f.buf = nil
			return f.readLong(final)
		}
		f.buf = make([]byte, 2*len(f.buf))
	}
	if len(f.buf) > fileReadChunk {
		f.buf = nil // done with the long line: the next read takes a chunk-sized buffer
	}
	if end < 0 {
		return nil, true // the line is not complete yet
	}
	chunk = bytes.Clone(chunk[:end+1]) // the events keep their payloads; f.buf is reused
	var out []connector.Event
	all, start, off := chunk, f.readPos, f.readPos
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		line := chunk[:i]
		if off == 0 {
			// A UTF-8 byte order mark before the first line (files saved by some Windows
			// editors) is not the record's, as `run` skips it (a hostile round: the first
			// line dead-lettered, "unexpected character '\ufeff'").
			line = bytes.TrimPrefix(line, []byte("\uFEFF"))
		}
		off += int64(i) + 1
		f.readLn++
		chunk = chunk[i+1:]
		// Blank: nothing to push, but the position moves past it; blank lines in a row are
		// one such event (a file of a million blank lines a MiB made 80 MB of them).
		blank := len(bytes.TrimSpace(line)) == 0
		if last := len(out) - 1; blank && last >= 0 && out[last].Skip {
			out[last].Line, out[last].Offset = f.readLn, off
			continue
		}
		out = append(out, connector.Event{Payload: line, Skip: blank, Line: f.readLn, Offset: off})
	}
	if synthetic {
		off--
		out[len(out)-1].Offset = off
	}
	f.readPos = off
	if start < headBytes && int64(len(f.head)) == start {
		f.head = append(f.head, all[:min(off-start, headBytes-start)]...) // as read
	}
	f.chunk, f.chunkStart, f.chunkMark = all, start, f.mark
	f.mark = markAfter(f.mark, all[:off-start]) // as read (not the synthetic '\n')
	if len(f.mark) < int(min(off, markBytes)) {
		// The bytes before this read are not known as read (restored from a checkpoint
		// that did not keep them): the file's now, once, rather than too few.
		f.mark = f.before(off)
	}
	return out, true
}

// markAfter is the last markBytes bytes of prev followed by b.
func markAfter(prev, b []byte) []byte {
	if len(b) >= markBytes {
		return bytes.Clone(b[len(b)-markBytes:])
	}
	keep := min(len(prev), markBytes-len(b))
	return append(bytes.Clone(prev[len(prev)-keep:]), b...)
}

// readLong reads on past the line at readPos, longer than maxFileLine, from longPos: at most
// maxFileLine bytes a poll, in chunks of fileReadChunk, none kept. Once its '\n' is read (or
// the file's end, when final) the line is one event, undecodable, its first bytes as its
// payload; until then there are none.
func (f *Input) readLong(final bool) ([]connector.Event, bool) {
	f.health.Set(fmt.Sprintf("file %q: line %d is longer than %d bytes: reading past it (%d bytes so far)", f.rel, f.readLn+1, maxFileLine, f.longPos-f.readPos))
	if f.longPos >= f.size && !final {
		return nil, true // nothing new
	}
	if len(f.buf) < fileReadChunk {
		f.buf = make([]byte, fileReadChunk)
	}
	buf := f.buf[:fileReadChunk]
	end := int64(-1)
	for read := 0; read < maxFileLine; {
		// A sparse file's hole is zeros: skipped, not read (a line of 100 GB of them read
		// 16 MiB a poll for twenty minutes).
		f.longPos = nextData(f.file, f.longPos, f.size)
		n, err := f.file.ReadAt(buf, f.longPos)
		if err != nil && err != io.EOF {
			f.health.Set(fmt.Sprintf("file %q: %v", f.rel, err))
			return nil, false
		}
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			end = f.longPos + int64(i) + 1
			break
		}
		f.longPos += int64(n)
		read += n
		if n < len(buf) {
			if final {
				end = f.longPos // the last line of a file no longer written
			}
			break
		}
	}
	if end < 0 {
		return nil, true // not at its end yet
	}
	f.readLn++
	ev := connector.Event{Payload: f.longHead, Line: f.readLn, Offset: end,
		Undecodable: fmt.Errorf("line %d is longer than %d bytes (%d bytes): not read; its first %d bytes are kept", f.readLn, maxFileLine, end-f.readPos, len(f.longHead))}
	// The line's bytes are not kept: a checkpoint before its event is pushed has the mark
	// of the position before it (chunkMark).
	f.chunk, f.chunkStart, f.chunkMark = []byte{}, f.readPos, f.mark
	f.readPos, f.longHead, f.longPos = end, nil, 0
	f.mark = f.before(end)
	f.health.Set("")
	return []connector.Event{ev}, true
}

// countLines sets f.line to the number of lines before f.pos.
func (f *Input) countLines() error {
	r := io.NewSectionReader(f.file, 0, f.pos)
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

// shownDir is the source directory as messages show it: absolute when it can be.
func (f *Input) shownDir() string {
	if abs, err := filepath.Abs(f.dir); err == nil {
		return abs
	}
	return f.dir
}

func (f *Input) PendingPartitions() ([]int32, bool) { return nil, false }

// Listing: a file has no partitions to list.
func (f *Input) Listing() (sent, answered time.Time) { return time.Time{}, time.Time{} }

// Partitions: none.
func (f *Input) Partitions() []int32 { return nil }

// ResumedAt: a file is not lost and found again.
func (f *Input) ResumedAt() time.Time { return time.Time{} }

// IdleClock: poll read every complete line the file had, so the file is caught up now.
func (f *Input) IdleClock(now time.Time) (time.Time, bool) { return now, true }

// Advance moves the position past ev; after the last line of a file another one replaced,
// to the start of the new file.
func (f *Input) Advance(ev connector.Event) {
	f.pos, f.line = ev.Offset, ev.Line
	if f.pos == f.readPos {
		f.chunk, f.chunkMark = nil, nil // its lines are pushed: the events let it go
	}
	if ev.Restart {
		f.rewind()
	}
}

func (f *Input) Positions() []connector.Position {
	return []connector.Position{{Partition: 0, Offset: f.pos}}
}

// Status counts bytes: known is the file's size, processed the position.
func (f *Input) Status() connector.Status {
	return connector.Status{Known: max(f.size, f.pos), Processed: f.pos, Err: f.health.Get()}
}

var _ connector.Input = (*Input)(nil)
