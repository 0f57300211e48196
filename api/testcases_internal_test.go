package api

import (
	"encoding/json"
	"testing"
)

// Saved test cases compare numbers as the engine's values: integers by their digits, floats by
// their float64 values, an integer never equal to a float (a hostile round: 9007199254740993
// passed as 9007199254740992, 1 as 1.0).
func TestSameJSONNumbers(t *testing.T) {
	for _, c := range []struct {
		got, want string
		same      bool
	}{
		{"9007199254740993", "9007199254740992", false},
		{"9223372036854775807", "9223372036854775296", false},
		{"9223372036854775807", "9223372036854775807", true},
		{"1", "1.0", false},
		{"2.0", "2", false},
		{"1.5e-07", "0.00000015", true},
		{"100.0", "1e2", true},
		{"0.1", "0.10000000000000001", true}, // one float64
		{"0", "-0", true},
		{`{"n": 1, "s": [2, 2.5]}`, `{"s": [2, 2.5], "n": 1}`, true},
		{`{"n": 1, "s": [2, 2.5]}`, `{"s": [2.0, 2.5], "n": 1}`, false},
	} {
		if got := sameJSON(json.RawMessage(c.got), json.RawMessage(c.want)); got != c.same {
			t.Errorf("sameJSON(%s, %s) = %t; want %t", c.got, c.want, got, c.same)
		}
	}
}
