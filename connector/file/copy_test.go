package file

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/connector"
)

// numbered is n lines {"p":"...","i":first}, {"p":"...","i":first+1}, ... each padded
// to 100 bytes with its '\n' (so that line k, from 1, ends at byte 100*k), its number last
// (so that the 16 bytes before a line's end differ from line to line).
func numbered(first, n int) string {
	var b strings.Builder
	for i := first; i < first+n; i++ {
		num := fmt.Sprintf(`","i":%d}`, i)
		b.WriteString(`{"p":"` + strings.Repeat(".", 99-6-len(num)) + num + "\n")
	}
	return b.String()
}

// numbers are the "i" of payload@line strings, as "i@line".
func numbers(t *testing.T, got []string) []string {
	t.Helper()
	out := make([]string, len(got))
	for k, g := range got {
		at := strings.LastIndexByte(g, '@')
		var v struct{ I int }
		if err := json.Unmarshal([]byte(g[:at]), &v); err != nil {
			t.Fatalf("line %q: %v", g, err)
		}
		out[k] = fmt.Sprintf("%d%s", v.I, g[at:])
	}
	return out
}

// restoredInput is a new Input of ev.ndjson in dir restored at pos with identity id, stopped
// when t ends.
func restoredInput(t *testing.T, dir string, pos []connector.Position, id []byte) *Input {
	t.Helper()
	in := NewInput("in", dir, "ev.ndjson", discard)
	t.Cleanup(in.Stop)
	if err := in.Restore(pos, id); err != nil {
		t.Fatal(err)
	}
	return in
}

// replaceWith puts content under path as a new file (another inode), as a copy or a
// restore on another machine does.
func replaceWith(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// A file under the name with another device and inode than the checkpointed one goes on
// from the position when it is a copy: at least as long, with the same first 4 KiB and the
// same 4 KiB before the position (the data directory restored on another machine with its
// sources; before, it was read from its start and its events processed twice); it is read
// from its start otherwise, also when only the 16 bytes before the position are alike (the
// identity compared no more before a review). Worked by hand, lines of 100 bytes: 60 lines read (position
// 6,000, past the 4,096 the fingerprint covers), or 3 (position 300, all of which it covers).
func TestInputCopyGoesOnFromItsPosition(t *testing.T) {
	for _, tc := range []struct {
		name, before string
		read         int
		after        func(before string) string
		want         []string // the payloads' "i" and line numbers read after the restore
		reset        bool
	}{
		{name: "a copy with lines appended", read: 60,
			after: func(b string) string { return b + numbered(60, 2) },
			want:  []string{"60@61", "61@62"}},
		{name: "a short copy with lines appended", read: 3,
			after: func(b string) string { return b + numbered(3, 1) },
			want:  []string{"3@4"}},
		{name: "another file, longer", read: 60,
			after: func(string) string { return numbered(100, 62) },
			want:  fromStart(100, 62), reset: true},
		{name: "the first 4 KiB alike, the bytes before the position not", read: 60,
			after: func(b string) string { return b[:5000] + numbered(200, 12) },
			want:  fromStart(0, 50, 200, 12), reset: true},
		{name: "the bytes before the position alike, the first bytes not", read: 60,
			after: func(b string) string { return numbered(300, 1) + b[100:] + numbered(60, 1) },
			want:  fromStart(300, 1, 1, 60), reset: true},
		{name: "the first 4 KiB and the 16 bytes before the position alike, the 4 KiB before it not", read: 60,
			after: func(b string) string { return b[:5000] + numbered(500, 9) + b[5900:6000] + numbered(60, 1) },
			want:  fromStart(0, 50, 500, 9, 59, 2), reset: true},
		{name: "a copy cut shorter than the position", read: 60,
			after: func(b string) string { return b[:5900] },
			want:  fromStart(0, 59), reset: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			content := numbered(0, tc.read)
			dir, path := eventFile(t, content)
			in := newInput(t, dir)
			if got, _ := lines(t, in); len(got) != tc.read {
				t.Fatalf("first poll: %d lines, want %d", len(got), tc.read)
			}
			pos, id := in.Positions(), in.Identity()
			if !slices.Equal(pos, []connector.Position{{Partition: 0, Offset: int64(100 * tc.read)}}) {
				t.Fatalf("position %+v, want byte %d", pos, 100*tc.read)
			}
			in.Stop()
			replaceWith(t, path, tc.after(content))
			again := restoredInput(t, dir, pos, id)
			got, reset := lines(t, again)
			got = numbers(t, got)
			if reset != tc.reset || !slices.Equal(got, tc.want) {
				t.Errorf("after the restore: %v, reset %v; want %v, reset %v", head(got), reset, head(tc.want), tc.reset)
			}
		})
	}
}

// fromStart is the "i@line" of the lines of a file read from its start, given as pairs of
// a first i and a count of lines numbered on from it.
func fromStart(runs ...int) []string {
	var out []string
	for r := 0; r+1 < len(runs); r += 2 {
		for k := range runs[r+1] {
			out = append(out, fmt.Sprintf("%d@%d", runs[r]+k, len(out)+1))
		}
	}
	return out
}

// The same file rewritten in place with the same 16 bytes before the position but other
// first bytes is read again from its start, while the server runs and after a restore (before,
// only the 16 bytes were compared, and it was taken for an append): 3 lines of 100 bytes
// read, then the file rewritten as a line {"i":7} and the last two lines as they were, and
// one more.
func TestInputRewrittenWithTheSameBytesBeforeThePosition(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprint("restart ", restart), func(t *testing.T) {
			content := numbered(0, 3)
			dir, path := eventFile(t, content)
			in := newInput(t, dir)
			if got, _ := lines(t, in); len(got) != 3 {
				t.Fatalf("first poll: %v", got)
			}
			pos, id := in.Positions(), in.Identity()
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0) // the same inode
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(numbered(7, 1) + content[100:] + numbered(3, 1)); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if restart {
				in.Stop()
				in = restoredInput(t, dir, pos, id)
			}
			got, reset := lines(t, in)
			got = numbers(t, got)
			want := []string{"7@1", "1@2", "2@3", "3@4"}
			if !reset || !slices.Equal(got, want) {
				t.Errorf("after the rewrite: %v, reset %v; want %v, reset", got, reset, want)
			}
		})
	}
}
