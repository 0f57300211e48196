package value

import (
	"fmt"
	"strings"
	"testing"
)

// A JSONEncoder keeps the keys of small records only: after a record of more than
// MaxKeptKeys fields, or of keys of more than MaxKeptKeyBytes, it holds nothing of it, and
// lets go of what it kept before; its JSON is AppendJSON's throughout. Before, a collect sink's
// encoder kept the widest record's keys for as long as its deployment ran (hostile round: 36
// sinks of events of 520,000 fields, one event each in 6 deployments, ended the server).
func TestJSONEncoderKeepsNoWideRecord(t *testing.T) {
	record := func(n, keyLen int) Value {
		keys, values := make([]string, n), make([]Value, n)
		for i := range n {
			keys[i] = fmt.Sprintf("%0*d", keyLen, i)
			values[i] = Int(int64(i) * 1_000_000_007)
		}
		return NewRecord(keys, values)
	}
	small, wide, long := record(3, 2), record(MaxKeptKeys+1, 4), record(10, MaxKeptKeyBytes/8)
	var e JSONEncoder
	for _, c := range []struct {
		name string
		v    Value
		kept bool
	}{{"small", small, true}, {"wide", wide, false}, {"small again", small, true}, {"long keys", long, false}, {"small at last", small, true}} {
		got := string(e.Append(nil, c.v))
		if want := string(AppendJSON(nil, c.v)); got != want {
			t.Errorf("%s: %.80s..., want %.80s...", c.name, got, want)
		}
		if kept := e.keys != nil; kept != c.kept {
			t.Errorf("%s: keys kept %v, want %v", c.name, kept, c.kept)
		}
		if !c.kept && (cap(e.enc) > 0 || cap(e.ints) > 0) {
			t.Errorf("%s: %d bytes of encoded keys and %d integers kept", c.name, cap(e.enc), cap(e.ints))
		}
	}
	if strings.Count(string(e.Append(nil, wide)), ":") != MaxKeptKeys+1 {
		t.Error("the wide record lost fields")
	}
}

// A Decoder keeps the keys of the records it decodes as the shape of their depth only for
// small records: after a record of more than MaxKeptKeys fields, or of keys of more than
// MaxKeptKeyBytes, it keeps none, and it decodes the next records as ParseJSON does. Before,
// a source's decoder kept the widest record's keys for as long as its deployment ran.
func TestDecoderKeepsNoWideShape(t *testing.T) {
	object := func(n, keyLen int, seed ...int) []byte {
		var b strings.Builder
		b.WriteByte('{')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"%0*d":%d`, keyLen, i, i+len(seed)*7)
		}
		b.WriteByte('}')
		return []byte(b.String())
	}
	var d Decoder
	for _, c := range []struct {
		name string
		b    []byte
		kept bool
	}{{"small", object(3, 2), true}, {"wide", object(MaxKeptKeys+1, 4), false}, {"small again", object(3, 2, 1), true},
		{"long keys", object(10, MaxKeptKeyBytes/8), false}, {"long keys again", object(10, MaxKeptKeyBytes/8, 1), false}} {
		got, err := d.Parse(c.b)
		want, werr := ParseJSON(c.b)
		if err != nil || werr != nil || string(AppendJSON(nil, got)) != string(AppendJSON(nil, want)) {
			t.Errorf("%s: decoded %.60s (%v), want %.60s (%v)", c.name, AppendJSON(nil, got), err, AppendJSON(nil, want), werr)
		}
		kept := false
		for _, sh := range d.shapes {
			kept = kept || sh.keys != nil
		}
		if kept != c.kept {
			t.Errorf("%s: keys kept %v, want %v", c.name, kept, c.kept)
		}
	}
}
