package file

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/scenario-server/scenario-server/connector"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// lines polls in once, advances every event, and returns the events' payloads with their
// line numbers ("payload@line"; skipped ones as "-@line").
func lines(t *testing.T, in connector.Input) ([]string, bool) {
	t.Helper()
	events, reset := in.Poll()
	var out []string
	for _, ev := range events {
		in.Advance(ev)
		p := string(ev.Payload)
		if ev.Skip {
			p = "-"
		}
		out = append(out, p+"@"+strconv.FormatInt(ev.Line, 10))
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
