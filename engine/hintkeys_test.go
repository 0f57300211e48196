package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/value"
)

// A path keeps the keys of the record it read as its hint only for small records: a record of
// more than value.MaxKeptKeys fields, or of keys of more than value.MaxKeptKeyBytes, is read without being
// kept (before, a deployment kept the last wide event's keys for as long as it ran).
func TestPathHintKeepsNoWideRecord(t *testing.T) {
	record := func(n, keyLen int) *value.Record {
		keys, values := make([]string, n), make([]value.Value, n)
		for i := range n {
			keys[i] = fmt.Sprintf("k%0*d", keyLen, i)
			values[i] = value.Int(int64(i))
		}
		return value.NewRecord(keys, values).Record()
	}
	for _, c := range []struct {
		name string
		r    *value.Record
		kept bool
	}{{"small", record(4, 1), true}, {"wide", record(value.MaxKeptKeys+1, 3), false}, {"long keys", record(4, value.MaxKeptKeyBytes/2), false}} {
		p := &pathRef{}
		name := c.r.Keys[2]
		if got := p.field(c.r, name); got.Int() != 2 {
			t.Errorf("%s: field %s is %v, want 2", c.name, strings.TrimLeft(name, "k0"), got)
		}
		if kept := p.hintKeys != nil; kept != c.kept {
			t.Errorf("%s: keys kept %v, want %v", c.name, kept, c.kept)
		}
		if got := p.field(c.r, name); got.Int() != 2 {
			t.Errorf("%s, again: field is %v, want 2", c.name, got)
		}
	}
}
