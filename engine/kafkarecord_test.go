package engine

import (
	"strconv"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/scenario"
	"github.com/scenario-server/scenario-server/value"
)

// KafkaRecordBytes counts what connector/kafka writes, worked out by hand: a string key its
// bytes, a value its JSON (an encoded one its bytes), a header its name, its value (a
// string's bytes, anything else's JSON) and 10 bytes; null key and headers nothing.
func TestKafkaRecordBytes(t *testing.T) {
	parse := func(s string) value.Value {
		v, err := value.ParseJSON([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var enc value.JSONEncoder
	for _, tc := range []struct {
		name              string
		key, val, headers value.Value
		encoded           bool
		want              int
	}{
		// "ab" 2; {"a":1} 7; h: 1 + 10 + 1 ("x"); n: 1 + 10 + 1 (5); z: null, left out.
		{"all", value.String("ab"), parse(`{"a":1}`), parse(`{"h":"x","n":5,"z":null}`), false, 2 + 7 + 12 + 12},
		// a number key is its JSON (3 bytes); a string value is quoted (5 bytes).
		{"json key, string value", parse(`123`), value.String("abc"), value.Null(), false, 3 + 5},
		// an encoded value is its bytes.
		{"encoded", value.Null(), value.String("abc"), value.Null(), true, 3},
	} {
		got, _ := KafkaRecordBytes(&enc, nil, tc.key, tc.val, tc.headers, tc.encoded)
		if got != tc.want {
			t.Errorf("%s: %d bytes, want %d", tc.name, got, tc.want)
		}
	}
}

// A Kafka record past the bound is a per-event error at its largest part's field: the key's,
// the value's or the headers' (a hostile round: a key too large was named the value's), with
// each part's bytes, worked out by hand (the string of 1,000 x: 1,000 bytes as a key, 1,002 as
// the value, quoted; "v" 3; a header h: 1 + 10 + its value, "small" 5, 1,000 x 1,000).
func TestKafkaRecordTooLargeAtItsField(t *testing.T) {
	for _, tc := range []struct{ key, val, headers, field, sizes string }{
		{`#input.big`, `"v"`, `{h: "small"}`, "key", "would be 1019 bytes (key 1000, value 3, headers 16)"},
		{`"k"`, `#input.big`, `{h: "small"}`, "value", "would be 1019 bytes (key 1, value 1002, headers 16)"},
		{`"k"`, `"v"`, `{h: #input.big}`, "headers", "would be 1015 bytes (key 1, value 3, headers 1011)"},
	} {
		sink := `{"id": "out", "type": "Sink", "ref": {"typ": "kafka", "parameters": [{"name": "topic", "value": "t"},
			{"name": "key", "expression": {"language": "expr", "expression": ` + strconv.Quote(tc.key) + `}},
			{"name": "value", "expression": {"language": "expr", "expression": ` + strconv.Quote(tc.val) + `}},
			{"name": "headers", "expression": {"language": "expr", "expression": ` + strconv.Quote(tc.headers) + `}}]}}`
		s, err := scenario.Decode([]byte(scenarioJSON([]string{srcNode("in", "#input.t", "0s"), sink}, []string{link("in", "out")})))
		if err != nil {
			t.Fatal(err)
		}
		e, err := New(s, Options{ScenarioName: "t", Bounded: true, MaxKafkaRecordBytes: 1000, Output: func(string, value.Value, int64) {}})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.PushJSON("in", []byte(`{"t": 1, "big": "`+strings.Repeat("x", 1000)+`"}`), 1); err != nil {
			t.Fatal(err)
		}
		errs, n := e.Errors()
		if n != 1 || errs[0].NodeID != "out" || errs[0].Field != tc.field || !strings.Contains(errs[0].Message, tc.sizes) {
			t.Errorf("%s too large: %d errors %+v; want one at out's %s, %q", tc.field, n, errs, tc.field, tc.sizes)
		}
	}
}
