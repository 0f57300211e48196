package file

import (
	"bytes"
	"crypto/sha256"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/connector"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// lines polls in once, advances every event, and returns the events' payloads with their
// line numbers ("payload@line"; skipped ones as "-@line").
func lines(t *testing.T, in connector.Input) ([]string, bool) {
	t.Helper()
	return polled(in, false)
}

// linesAt is lines with each event's offset after its line: "payload@line/offset".
func linesAt(t *testing.T, in connector.Input) []string {
	t.Helper()
	out, _ := polled(in, true)
	return out
}

func polled(in connector.Input, offsets bool) ([]string, bool) {
	events, reset := in.Poll()
	var out []string
	for _, ev := range events {
		in.Advance(ev)
		p := string(ev.Payload)
		if ev.Skip {
			p = "-"
		}
		p += "@" + strconv.FormatInt(ev.Line, 10)
		if offsets {
			p += "/" + strconv.FormatInt(ev.Offset, 10)
		}
		out = append(out, p)
	}
	return out, reset
}

// The file Input against the contract: complete lines only, blank lines skipped but counted,
// the position a byte offset in partition 0, an Input restored there going on with the right
// line numbers, and a truncated file read again from its start (reset).
func TestInputContract(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ev.ndjson")
	write := func(s string, flag int) {
		f, err := os.OpenFile(path, flag|os.O_WRONLY|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	in := NewInput("in", dir, "ev.ndjson", discard)
	defer in.Stop()
	if err := in.Restore(nil, nil); err != nil {
		t.Fatal(err)
	}
	in.Start(t.Context(), func() {})
	if got, _ := lines(t, in); len(got) != 0 || in.Status().Err == "" {
		t.Errorf("no file yet: %v, status %+v", got, in.Status())
	}

	write("{\"a\":1}\n\n{\"a\":2}\n{\"a\"", os.O_TRUNC) // 8 + 1 + 8 bytes of complete lines, then a partial one
	got, _ := lines(t, in)
	if !slices.Equal(got, []string{`{"a":1}@1`, `-@2`, `{"a":2}@3`}) {
		t.Errorf("first poll: %v", got)
	}
	if pos := in.Positions(); !slices.Equal(pos, []connector.Position{{Partition: 0, Offset: 17}}) {
		t.Errorf("positions %+v, want byte 17", pos)
	}
	if st := in.Status(); st.Known != 21 || st.Processed != 17 || st.Err != "" {
		t.Errorf("status %+v, want 21 known, 17 processed", st)
	}
	if at, ok := in.IdleClock(time.Unix(5, 0)); !ok || !at.Equal(time.Unix(5, 0)) {
		t.Errorf("idle clock %v %v, want now", at, ok)
	}
	write(":3}\n", os.O_APPEND)
	if got, _ := lines(t, in); !slices.Equal(got, []string{`{"a":3}@4`}) {
		t.Errorf("the completed line: %v", got)
	}
	pos, id := in.Positions(), in.Identity()
	if len(id) == 0 {
		t.Error("no identity for a position inside a file")
	}

	// Another Input restored at the position goes on with line 5.
	write("{\"a\":4}\n", os.O_APPEND)
	again := NewInput("in", dir, "ev.ndjson", discard)
	defer again.Stop()
	if err := again.Restore(pos, id); err != nil {
		t.Fatal(err)
	}
	if got, _ := lines(t, again); !slices.Equal(got, []string{`{"a":4}@5`}) {
		t.Errorf("after the restore: %v", got)
	}

	// Truncated: read again from the start, the reset reported.
	write("{\"b\":1}\n", os.O_TRUNC)
	if got, reset := lines(t, again); !reset || !slices.Equal(got, []string{`{"b":1}@1`}) {
		t.Errorf("after the truncation: %v, reset %v", got, reset)
	}
	if err := NewInput("in", dir, "ev.ndjson", discard).Restore([]connector.Position{{Partition: 1, Offset: 3}}, nil); err == nil {
		t.Error("a position in partition 1 restored without an error")
	}
}

// Blank lines in a row are one skipped event, at the last of them (a file of a million blank
// lines a MiB made a million events a poll): worked by hand, "\n\n\n" is lines 1-3 (bytes
// 0-2), `{"a":1}` line 4 (bytes 3-10), "\n\n" lines 5-6 (bytes 11-12).
func TestInputBlankLinesInARow(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ev.ndjson"), []byte("\n\n\n{\"a\":1}\n\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := linesAt(t, newInput(t, dir))
	if want := []string{"-@3/3", `{"a":1}@4/11`, "-@6/13"}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// A UTF-8 byte order mark before the first line is not the record's (as `run` skips it);
// one on a later line is, and the offsets count its bytes (a hostile round: the first line
// dead-lettered, "unexpected character '\ufeff'").
func TestInputByteOrderMark(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ev.ndjson"), []byte("\uFEFF{\"a\":1}\n\uFEFF{\"a\":2}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := linesAt(t, newInput(t, dir))
	if want := []string{`{"a":1}@1/11`, "\uFEFF" + `{"a":2}@2/22`}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

// A line longer than maxFileLine is read past, at most maxFileLine bytes a poll, and is one
// undecodable event with its first longLineHeadBytes; the lines after it follow, and the
// buffer grown for it is let go. The file is sparse: a line of 20 MiB of zero bytes (line 1,
// bytes 0 to 20 MiB, its '\n' at 20 MiB), then `{"a":1}` (line 2). Worked by hand: the first
// poll grows the buffer to 16 MiB (maxFileLine), finds no '\n', and reads on 4 MiB to it:
// the event of line 1 ends at 20 MiB + 1; the second poll reads line 2.
func TestInputLineLongerThanTheMost(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ev.ndjson")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const long = 20 << 20
	if _, err := f.WriteAt([]byte("\n{\"a\":1}\n"), long); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	in := newInput(t, dir)
	events, _ := in.Poll()
	if len(events) != 1 || events[0].Undecodable == nil || events[0].Line != 1 || events[0].Offset != long+1 || len(events[0].Payload) != longLineHeadBytes {
		t.Fatalf("first poll: %d events %+v; want line 1 undecodable, ending at %d, with its first %d bytes", len(events), events, long+1, longLineHeadBytes)
	}
	in.Advance(events[0])
	if len(in.buf) > fileReadChunk {
		t.Errorf("the buffer holds %d bytes after the long line; want at most %d", len(in.buf), fileReadChunk)
	}
	if got, _ := lines(t, in); !slices.Equal(got, []string{`{"a":1}@2`}) {
		t.Errorf("second poll: %v", got)
	}
	if st := in.Status(); st.Err != "" || st.Processed != long+9 {
		t.Errorf("status %+v, want no problem and %d processed", st, long+9)
	}
}

// A line longer than maxFileLine still being written is read past as it grows, at most
// maxFileLine bytes a poll, and never read again from its start: 40 MiB of 'x' take the
// first poll (16 MiB in the buffer, 16 MiB more) and a second of 8 MiB, and then wait for
// the line's end.
func TestInputLongLineReadOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ev.ndjson")
	if err := os.WriteFile(path, bytes.Repeat([]byte("x"), 40<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	in := newInput(t, dir)
	for i, want := range []int64{32 << 20, 40 << 20, 40 << 20} {
		if events, _ := in.Poll(); len(events) != 0 || in.longPos != want {
			t.Fatalf("poll %d: %d events, read up to %d; want none, up to %d", i+1, len(events), in.longPos, want)
		}
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if events, _ := in.Poll(); len(events) != 1 || events[0].Undecodable == nil || events[0].Offset != 40<<20+1 {
		t.Fatalf("after its end: %+v", events)
	}
}

// The buffer grown for a long line is let go once the line is read, though the same read
// took the lines after it (a 40 MiB line kept 64 MiB for good in each deployment reading it).
func TestInputLetsTheLongLineBufferGo(t *testing.T) {
	dir := t.TempDir()
	line := `{"pad":"` + strings.Repeat("y", 3<<20) + "\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "ev.ndjson"), []byte(line+"{\"a\":1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := newInput(t, dir)
	if events, _ := in.Poll(); len(events) != 2 || len(events[0].Payload) != len(line)-1 {
		t.Fatalf("%d events, want the long line and the short one", len(events))
	}
	if len(in.buf) > fileReadChunk {
		t.Errorf("the buffer holds %d bytes after the long line; want at most %d", len(in.buf), fileReadChunk)
	}
}

// newInput is the Input of ev.ndjson in dir, restored at the file's start.
func newInput(t *testing.T, dir string) *Input {
	t.Helper()
	return restoredInput(t, dir, nil, nil)
}

// A checkpoint taken while the last lines of a file another one replaced are being pushed
// keeps the replaced file's identity, so that a restore there reads the new file from its
// start. Worked by hand: the old file is `{"a":1}\n` (8 bytes, pushed) then `{"a":2}` without
// its '\n'; the new file, renamed over it, is `{"b":1}\n{"b":2}\n`. The poll hands over
// `{"a":2}` (the old file's unended last line, marked Restart); before it is advanced, the
// position is byte 8 of the old file. Restored there with the identity it had, the new
// file is another file, so it is read from its start: both its lines, at lines 1 and 2.
// With no identity, the new file was read from its byte 8: `{"b":2}` alone, at line 1.
func TestInputCheckpointWhileTheReplacedFileEnds(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ev.ndjson")
	if err := os.WriteFile(path, []byte("{\"a\":1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := NewInput("in", dir, "ev.ndjson", discard)
	defer in.Stop()
	if err := in.Restore(nil, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := lines(t, in); !slices.Equal(got, []string{`{"a":1}@1`}) {
		t.Fatalf("first poll: %v", got)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"a":2}`); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "new.tmp")
	if err := os.WriteFile(tmp, []byte("{\"b\":1}\n{\"b\":2}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	events, _ := in.Poll()
	if len(events) != 1 || string(events[0].Payload) != `{"a":2}` || !events[0].Restart {
		t.Fatalf("the replaced file's last line: %+v", events)
	}
	pos, id := in.Positions(), in.Identity() // a checkpoint before the event is pushed
	if !slices.Equal(pos, []connector.Position{{Partition: 0, Offset: 8}}) || len(id) == 0 {
		t.Fatalf("checkpoint at %+v with identity %x, want byte 8 of the replaced file", pos, id)
	}
	again := NewInput("in", dir, "ev.ndjson", discard)
	defer again.Stop()
	if err := again.Restore(pos, id); err != nil {
		t.Fatal(err)
	}
	if got, _ := lines(t, again); !slices.Equal(got, []string{`{"b":1}@1`, `{"b":2}@2`}) {
		t.Errorf("restored: %v, want the new file from its start", got)
	}

	// Without the checkpoint, the first Input goes on with the new file from its start.
	in.Advance(events[0])
	if got, _ := lines(t, in); !slices.Equal(got, []string{`{"b":1}@1`, `{"b":2}@2`}) {
		t.Errorf("after the replaced file's last line: %v", got)
	}
}

// A file rewritten in place, as logrotate's copytruncate does (truncated, then written
// again, before the next poll), is read again from its start, while the server runs and
// after a restore at a checkpoint taken before. Worked by hand: `{"a":1}\n{"a":2}\n` is
// 16 bytes, read; the file is then truncated and `{"b":10}\n{"b":20}\n{"b":3}\n` (26 bytes)
// written, so it is not shorter than the position. Read from byte 16, as it was without
// the bytes before the position remembered, it gave `}` (the end of `{"b":20}`) and
// `{"b":3}` at lines 3 and 4, and lost the others. Restored from a checkpoint taken after the
// rewrite and before the next poll too: the checkpoint keeps the bytes as they were read
// (review: read again at the checkpoint, they were the new file's, and the restore took it
// for the same file).
func TestInputRewrittenInPlace(t *testing.T) {
	for _, mode := range []string{"running", "restored", "checkpointed after the rewrite"} {
		restart := mode != "running"
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "ev.ndjson")
			if err := os.WriteFile(path, []byte("{\"a\":1}\n{\"a\":2}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			in := newInput(t, dir)
			if got, _ := lines(t, in); !slices.Equal(got, []string{`{"a":1}@1`, `{"a":2}@2`}) {
				t.Fatalf("first poll: %v", got)
			}
			before, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			pos, id := in.Positions(), in.Identity()
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0) // the same file: copytruncate's
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString("{\"b\":10}\n{\"b\":20}\n{\"b\":3}\n"); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if after, err := os.Stat(path); err != nil || !os.SameFile(before, after) {
				t.Fatalf("the rewrite made another file (%v)", err)
			}
			if mode == "checkpointed after the rewrite" {
				pos, id = in.Positions(), in.Identity()
			}
			if restart {
				in.Stop()
				in = restoredInput(t, dir, pos, id)
			}
			got, reset := lines(t, in)
			if want := []string{`{"b":10}@1`, `{"b":20}@2`, `{"b":3}@3`}; !reset || !slices.Equal(got, want) {
				t.Errorf("after the rewrite: %v, reset %v; want %v, reset", got, reset, want)
			}
		})
	}
}

// Lines appended after the position are not taken for a rewrite, while running and after
// a restore with the identity of an older version (the fileID alone, without the bytes
// before the position; the fileID and those bytes, without the fingerprint): `{"a":1}\n`
// read, then `{"a":2}\n` appended, read as line 2 without a reset.
func TestInputAppendedIsNotARewrite(t *testing.T) {
	dir, path := eventFile(t, "{\"a\":1}\n")
	in := newInput(t, dir)
	if got, _ := lines(t, in); !slices.Equal(got, []string{`{"a":1}@1`}) {
		t.Fatalf("first poll: %v", got)
	}
	pos, id := in.Positions(), in.Identity()
	if len(id) != 16+32+32 {
		t.Fatalf("identity of %d bytes, want the fileID's 16, then the SHA-256 of the first bytes and of those before the position, 32 each", len(id))
	}
	if sum := sha256.Sum256([]byte("{\"a\":1}\n")); !bytes.Equal(id[16:48], sum[:]) || !bytes.Equal(id[48:], sum[:]) {
		t.Fatalf("fingerprint %x and bytes before the position %x; want the SHA-256 of the 8 bytes read, %x, twice", id[16:48], id[48:], sum)
	}
	withoutFingerprint := append(bytes.Clone(id[:16]), "{\"a\":1}\n"...) // (as identities were before it)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("{\"a\":2}\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for _, restoredID := range [][]byte{nil, id, id[:16], withoutFingerprint} {
		again := in
		if restoredID != nil {
			again = NewInput("in", dir, "ev.ndjson", discard)
			t.Cleanup(again.Stop)
			if err := again.Restore(pos, restoredID); err != nil {
				t.Fatal(err)
			}
		}
		if got, reset := lines(t, again); reset || !slices.Equal(got, []string{`{"a":2}@2`}) {
			t.Errorf("identity %x: %v, reset %v; want line 2, no reset", restoredID, got, reset)
		}
	}
}
