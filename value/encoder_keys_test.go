package value

import (
	"fmt"
	"strings"
	"testing"
)

// A JSONEncoder keeps the keys of small records only: after a record of more than
// maxEncoderKeys fields, or of keys of more than maxEncoderKeyBytes, it holds nothing of it, and
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
	small, wide, long := record(3, 2), record(maxEncoderKeys+1, 4), record(10, maxEncoderKeyBytes/8)
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
	if strings.Count(string(e.Append(nil, wide)), ":") != maxEncoderKeys+1 {
		t.Error("the wide record lost fields")
	}
}
