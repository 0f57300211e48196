package engine

import (
	"testing"

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
