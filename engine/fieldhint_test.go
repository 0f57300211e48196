package engine

import (
	"testing"

	"github.com/scenario-server/scenario-server/value"
)

// A path reads a field of records pushed already decoded where the last record of the same
// keys had it: records of other keys, of a shorter slice of the same keys (without the
// field), and with the field elsewhere must each still give their own field. The expected
// lines are worked out by hand from the records.
func TestFieldOfPushedRecordsOfChangingShapes(t *testing.T) {
	sc := scenarioJSON([]string{
		`{"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": []}}`,
		sinkNode("out", "{b: #input.b, a: #input.a}"),
	}, []string{link("in", "out")})
	e, _, output := writingEngine(t, sc)
	ab := []string{"a", "b"}
	ba := []string{"b", "a"}
	records := []value.Value{
		value.NewRecord(ab, []value.Value{value.Int(1), value.Int(2)}),
		value.NewRecord(ab, []value.Value{value.Int(3), value.Int(4)}),
		value.NewRecord(ab[:1], []value.Value{value.Int(5)}), // the same keys, without b
		value.NewRecord(ba, []value.Value{value.Int(6), value.Int(7)}),
		value.NewRecord(ab, []value.Value{value.Int(8), value.Int(9)}),
		value.NewRecord([]string{"c", "b", "a"}, []value.Value{value.Int(0), value.Int(10), value.Int(11)}),
		value.Int(12), // not a record
		value.NewRecord(ba, []value.Value{value.Int(13), value.Int(14)}),
	}
	for i, r := range records {
		if err := e.PushValue("in", r, 0, int64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	e.Flush()
	want := `{"sink":"out","value":{"b":2,"a":1}}
{"sink":"out","value":{"b":4,"a":3}}
{"sink":"out","value":{"b":null,"a":5}}
{"sink":"out","value":{"b":6,"a":7}}
{"sink":"out","value":{"b":9,"a":8}}
{"sink":"out","value":{"b":10,"a":11}}
{"sink":"out","value":{"b":13,"a":14}}
`
	if got := output(); got != want {
		t.Errorf("output\n%s\nwant\n%s", got, want)
	}
	if _, n := e.Errors(); n != 1 {
		t.Errorf("%d errors, want 1 (the integer pushed as a record)", n)
	}
}
