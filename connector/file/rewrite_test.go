package file

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/connector"
)

// eventFile writes content to ev.ndjson in a new directory, and returns both.
func eventFile(t *testing.T, content string) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, "ev.ndjson")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

// appendsAreNotRewrites appends {"b":2}, which in reads as one line without a reset, then
// {"c":3}, which it reads as the one line want, without a reset.
func appendsAreNotRewrites(t *testing.T, in *Input, path, want string) {
	t.Helper()
	appendTo(t, path, "{\"b\":2}\n")
	if got, reset := lines(t, in); reset || len(got) != 1 {
		t.Fatalf("after restore: %v reset %v", got, reset)
	}
	appendTo(t, path, "{\"c\":3}\n")
	if got, reset := lines(t, in); reset || !slices.Equal(got, []string{want}) {
		t.Errorf("plain append after a short first read: got %d events (reset %v) %v; want %v", len(got), reset, head(got), want)
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// Restored from an identity of the version before the marks (the fileID alone), the first
// poll reads fewer than 16 bytes; the next poll after a plain append is not taken for a
// rewrite (a review found it was: the whole file was read again, 15 events of old lines).
func TestInputOldIdentityShortReadThenAppend(t *testing.T) {
	for _, prefix := range []int{8, 100} {
		t.Run("pos"+strconv.Itoa(prefix), func(t *testing.T) {
			var sb strings.Builder
			n := 0
			for sb.Len() < prefix {
				sb.WriteString("{\"a\":1}\n")
				n++
			}
			dir, path := eventFile(t, sb.String())
			in := newInput(t, dir)
			got, _ := lines(t, in)
			if len(got) != n {
				t.Fatalf("first poll %v", got)
			}
			pos, id := in.Positions(), in.Identity()
			in.Stop()
			old := id[:16] // the identity a checkpoint of the version before 1414d17 holds
			again := NewInput("in", dir, "ev.ndjson", discard)
			t.Cleanup(again.Stop)
			if err := again.Restore(pos, old); err != nil {
				t.Fatal(err)
			}
			appendsAreNotRewrites(t, again, path, `{"c":3}@`+strconv.Itoa(n+2))
		})
	}
}

// The same with no identity at all (fileID nil: systems without device/inode, or a
// checkpoint taken before fileIDs existed).
func TestInputNilIdentityShortReadThenAppend(t *testing.T) {
	dir, path := eventFile(t, strings.Repeat("{\"a\":1}\n", 10))
	in := NewInput("in", dir, "ev.ndjson", discard)
	t.Cleanup(in.Stop)
	if err := in.Restore(connectorPosList{{0, 80}}.conv(), nil); err != nil {
		t.Fatal(err)
	}
	appendsAreNotRewrites(t, in, path, `{"c":3}@12`)
}

// A checkpoint taken in the middle of a poll's lines (pos < readPos), after the file was
// rewritten in place since the poll: a restore there reads the new file from its start (a
// review found the checkpoint read the bytes again: "}@2 {\"b\":30}@3 ...", no reset).
func TestInputMidPollCheckpointAfterRewrite(t *testing.T) {
	dir, path := eventFile(t, "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n{\"a\":4}\n")
	in := newInput(t, dir)
	events, _ := in.Poll()
	if len(events) != 4 {
		t.Fatal(len(events))
	}
	in.Advance(events[0])
	in.Advance(events[1]) // pos 16, readPos 32: the rest is leftover
	// copytruncate: truncated, then the writer writes new lines (with the same first 16 bytes
	// would be undetectable; these differ).
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{\"b\":10}\n{\"b\":20}\n{\"b\":30}\n{\"b\":40}\n")
	f.Close()
	pos, id := in.Positions(), in.Identity() // the checkpoint
	in.Stop()
	again := NewInput("in", dir, "ev.ndjson", discard)
	t.Cleanup(again.Stop)
	if err := again.Restore(pos, id); err != nil {
		t.Fatal(err)
	}
	got, reset := lines(t, again)
	want := []string{`{"b":10}@1`, `{"b":20}@2`, `{"b":30}@3`, `{"b":40}@4`}
	if !reset || !slices.Equal(got, want) {
		t.Errorf("restored at a mid-poll checkpoint after a rewrite: %v reset %v; want %v, reset", got, reset, want)
	}
}

// Many small appends, partial lines, CRLF, exactly 1 MiB boundary: no false reset.
func TestInputNoFalseResetOnAppends(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ev.ndjson")
	os.WriteFile(path, nil, 0o600)
	in := newInput(t, dir)
	total := 0
	pieces := []string{"{\"a\"", ":1}\r", "\n", "{", "\"a\":2}\r\n\n\n", "x\n", strings.Repeat("y", (1<<20)-1) + "\n", strings.Repeat("z", (1<<20)+5) + "\n", "{\"q\":1}"}
	for i := 0; i < 200; i++ {
		pieces = append(pieces, "{\"i\":"+strconv.Itoa(i)+"}\n")
	}
	for i, p := range pieces {
		appendTo(t, path, p)
		got, reset := lines(t, in)
		if reset {
			t.Fatalf("piece %d: reset", i)
		}
		total += len(got)
		// checkpoint & restore every few pieces
		if i%3 == 0 {
			pos, id := in.Positions(), in.Identity()
			in.Stop()
			in = NewInput("in", dir, "ev.ndjson", discard)
			t.Cleanup(in.Stop)
			if err := in.Restore(pos, id); err != nil {
				t.Fatal(err)
			}
		}
	}
}

type connectorPos struct {
	p int32
	o int64
}

type connectorPosList []connectorPos

func (l connectorPosList) conv() []connector.Position {
	var out []connector.Position
	for _, p := range l {
		out = append(out, connector.Position{Partition: p.p, Offset: p.o})
	}
	return out
}

func head(s []string) []string {
	if len(s) > 4 {
		return append(s[:4:4], "...")
	}
	return s
}
