package engine

import (
	"strings"
	"testing"
)

// An event time between 1970-01-02 and 1973-03-03 (1e8 to 1e11 ms) at a source whose latest
// event time is after (1e11 ms or more) is a per-event error at the source's timestamp, saying
// to multiply seconds by 1000, and goes no further: by hand, 1714557650 (2024-05-01 in
// seconds) after 1714557600000 ms. The event before it, a time of 1e11 - 1 as the first
// event (a source all of whose times are so is SecondsHint's), one of 1e8 - 1 after (before
// 1970-01-02: not a time in seconds of this century) and one of 1e11 are not.
func TestSecondsAmongMilliseconds(t *testing.T) {
	sc := scenarioJSON([]string{
		srcNode("in", "#input.t", "0s"),
		sinkNode("out", "#input.n"),
	}, []string{link("in", "out")})
	out, e, _ := replay(t, sc, `{"t": 99999999999, "n": 1}
{"t": 1714557600000, "n": 2}
{"t": 1714557650, "n": 3}
{"t": 99999999, "n": 4}
{"t": 100000000000, "n": 5}
{"t": 1714557601000, "n": 6}
`)
	expectLines(t, out, `{"sink":"out","value":1}`, `{"sink":"out","value":2}`, `{"sink":"out","value":4}`, `{"sink":"out","value":5}`, `{"sink":"out","value":6}`)
	errs, n := e.Errors()
	if n != 1 || errs[0].Line != 3 || errs[0].NodeID != "in" || errs[0].Field != "timestamp" ||
		!strings.Contains(errs[0].Message, "event time 1714557650 ms is 1970-01-20T20:15:57.65Z, before 1973-03-03, where the source's latest is 2024-05-01T10:00:00Z") ||
		!strings.Contains(errs[0].Message, "multiply it by 1000") {
		t.Fatalf("errors %v; want one, at line 3, in timestamp, saying to multiply by 1000", errs)
	}
	if c := e.Counts()["in"]; c.In != 6 || c.Out != 5 || c.Errors != 1 {
		t.Errorf("source counts %+v; want in 6, out 5, errors 1", c)
	}
}
