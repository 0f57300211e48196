package engine

import (
	"fmt"
	"strings"
	"testing"
)

// A line longer than MaxLineBytes is a per-event error with its whole length, whatever part
// of it Replay keeps; a line of nothing but blanks, however long, is blank (helper 113: 20 MB
// of spaces before {"lost": 1} dropped the record without an error, and {"a": 1}, 20 MB of
// spaces and GARBAGE{"b": 2} gave the record {"a": 1}, both with errors=0 and exit 0). The
// lengths are worked out from how the lines are made: 17 MiB = 17,825,792 bytes.
func TestReplayLinesLongerThanTheLimit(t *testing.T) {
	spaces := strings.Repeat(" ", 17<<20)
	input := spaces + `{"t": 1}` + "\n" + // line 1: 17,825,800 bytes
		`{"t": 2}` + spaces + `GARBAGE{"t": 3}` + "\n" + // line 2: 17,825,815 bytes
		spaces + "\r\n" + // line 3: blank
		`{"t": 4}` + "\n" // line 4
	sc := scenarioJSON([]string{srcNode("in", "#input.t", "0s"), sinkNode("out", "#input.t")}, []string{link("in", "out")})
	out, e, sum := replay(t, sc, input)
	expectLines(t, out, `{"sink":"out","value":4}`)
	errs, n := e.Errors()
	var got []string
	for _, err := range errs {
		got = append(got, fmt.Sprintf("%d %s %s", err.Line, err.NodeID, err.Message))
	}
	want := []string{
		fmt.Sprintf("1 in line of %d bytes is longer than %d", 17<<20+8, MaxLineBytes),
		fmt.Sprintf("2 in line of %d bytes is longer than %d", 17<<20+23, MaxLineBytes),
	}
	if n != 2 || strings.Join(got, "\n") != strings.Join(want, "\n") || sum.Events != 3 {
		t.Errorf("%d errors:\n%s\nwant:\n%s\n(and 3 events: %d)", n, strings.Join(got, "\n"), strings.Join(want, "\n"), sum.Events)
	}
}
