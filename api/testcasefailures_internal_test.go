package api

import (
	"encoding/json"
	"strings"
	"testing"
)

// A test case's failure quotes at most 1 KiB of each value, and says how long it is (30 saved
// test cases of a sink writing 10 MB values answered 300 MB: hostile round). Worked by hand:
// a string of 100,000 "é" is 200,002 bytes of JSON; its first 1,024 bytes end inside a
// character (the quote and 511 "é" are 1,023 bytes), so 1,023 are shown.
func TestTestCaseFailuresQuoteClippedValues(t *testing.T) {
	long := json.RawMessage(`"` + strings.Repeat("é", 100_000) + `"`)
	res := TestResult{SinkOutputs: map[string]SinkTestOutputs{"out": {Total: 1, Outputs: []SinkOutput{{Value: long}}}}}
	failures := compareOutputs(map[string][]json.RawMessage{"out": {json.RawMessage(`"a"`)}}, res)
	want := `sink "out": value #1 is "` + strings.Repeat("é", 511) + `… (200002 bytes in all), expected "a"`
	if len(failures) != 1 || failures[0] != want {
		t.Errorf("failures %d, the first %d bytes; want one of %d bytes", len(failures), len(strings.Join(failures, "")), len(want))
	}
	short := json.RawMessage(`{"a":1}`)
	res.SinkOutputs["out"] = SinkTestOutputs{Total: 1, Outputs: []SinkOutput{{Value: short}}}
	if f := compareOutputs(map[string][]json.RawMessage{"out": {json.RawMessage(`{"a":2}`)}}, res); len(f) != 1 || f[0] != `sink "out": value #1 is {"a":1}, expected {"a":2}` {
		t.Errorf("a short value: %q", f)
	}
}

// A per-event error without a field is named by its node alone ("the first at s, line 1"),
// not with a space before the comma (a hostile round saw "the first at s , line 1").
func TestTestCaseFailureOfARecordNotRead(t *testing.T) {
	res := TestResult{SinkOutputs: map[string]SinkTestOutputs{}, TotalErrors: 1,
		Errors: []TestError{{NodeID: "s", Line: 1, Message: "not a JSON record"}}}
	want := []string{"1 per-event error: the first at s, line 1: not a JSON record"}
	if got := compareOutputs(map[string][]json.RawMessage{}, res); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("failures %q, want %q", got, want)
	}
}
