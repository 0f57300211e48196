package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/deploy"
)

// splitRecords frames a JSON array as json.Unmarshal into []json.RawMessage does (the oracle:
// what it did before it stopped at too many events): the same elements, byte for byte, and
// an error where the oracle has one.
func TestSplitRecordsArrayAsUnmarshal(t *testing.T) {
	for _, body := range []string{
		`[{"a": 1}, {"b": [1, 2]}]`, ` [ {} ,{ } ] `, `[1, "x", null, {"a": "]"}]`, `[{"a": "\"],"}]`,
		`[]`, `[{}`, `[{},]`, `[{} {}]`, `[{}]]`, `[{}] x`, `[,{}]`, `[{"a": 1,}]`, `[{}]` + "\n", "[\xff]",
	} {
		testSplitArray(t, body)
	}
}

func FuzzSplitRecordsArray(f *testing.F) {
	for _, s := range []string{`[{"a": 1}, {"b": [1, 2]}]`, `[{},]`, `[{} {}]`, `[{}] x`, `["\u00e9", 1e5]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if strings.HasPrefix(strings.TrimSpace(body), "[") {
			testSplitArray(t, body)
		}
	})
}

func testSplitArray(t *testing.T, body string) {
	t.Helper()
	var want []json.RawMessage
	wantErr := json.Unmarshal(bytes.TrimSpace([]byte(body)), &want)
	if wantErr == nil && len(want) == 0 {
		wantErr = errors.New("no events") // both refuse an empty batch
	}
	got, err := splitRecords("application/json", []byte(body))
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: error %v, the oracle's %v", body, err, wantErr)
	}
	if err != nil {
		return
	}
	if len(got) != len(want) {
		t.Fatalf("%q: %d records, the oracle %d", body, len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("%q: record %d is %q, the oracle's %q", body, i, got[i], want[i])
		}
	}
}

// A body of more events than a batch takes is refused once the one past the most is met, as
// NDJSON and as an array; at the most, every event is there. A 10 MiB body of five million
// empty events (the most a request holds) is refused without framing them all: it allocated
// about 160 MB (a slice header each, grown by a quarter at a time); a handful at once ended a
// process of 2 GB.
func TestSplitRecordsBounded(t *testing.T) {
	most := deploy.MaxBatchEvents
	lines := func(n int) []byte { return bytes.Repeat([]byte("{}\n"), n) }
	array := func(n int) []byte {
		return append(append([]byte("["), bytes.TrimSuffix(bytes.Repeat([]byte("{},"), n), []byte(","))...), ']')
	}
	for _, c := range []struct {
		ctype string
		body  func(int) []byte
	}{{ndjson, lines}, {"application/json", array}} {
		if got, err := splitRecords(c.ctype, c.body(most)); err != nil || len(got) != most {
			t.Fatalf("%s, %d events: %d records, %v", c.ctype, most, len(got), err)
		}
		_, err := splitRecords(c.ctype, c.body(most+1))
		var p *ProblemDetails
		if !errors.As(err, &p) || p.Status != 400 || p.Code != CodeInvalidEvent ||
			p.Detail != "the batch has more than 100000 events; send at most 100000 at once" {
			t.Fatalf("%s, %d events: %v", c.ctype, most+1, err)
		}
	}
	body := lines(DefaultMaxBodyBytes / 3) // 3,495,253 events
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := splitRecords(ndjson, body)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a 10 MiB body of 3,495,253 events was framed")
	}
	// At most the slice of most+1 headers (2.4 MB) and the error.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 3<<20 {
		t.Errorf("refusing 3,495,253 events allocated %d bytes", alloc)
	}
}

// NDJSON sent as application/json is refused at once with a hint to send it as
// application/x-ndjson (a new user's likeliest slip: the engine's "unexpected character '{'
// after the JSON value" did not say what to do); that hint never comes for a body that is one
// JSON value, which the oracle json.Valid tells.
func TestSplitRecordsNDJSONAsJSON(t *testing.T) {
	_, err := splitRecords("application/json", []byte("{\"a\": 1}\n{\"a\": 2}\n"))
	if err == nil || !strings.Contains(err.Error(), "Content-Type: application/x-ndjson") {
		t.Errorf("two lines as application/json: %v, want the hint", err)
	}
	for _, body := range []string{"{\n  \"a\": {\"b\": 1}\n}", "{\"a\": 1}\n", "{}\n\n", "{\"a\": {}\n, \"b\": {}}"} {
		got, err := splitRecords("application/json", []byte(body))
		if !json.Valid([]byte(body)) {
			t.Fatalf("%q: not one JSON value", body)
		}
		if err != nil || len(got) != 1 {
			t.Errorf("%q: %d records, %v; want the one", body, len(got), err)
		}
	}
}

func FuzzSplitRecordsNDJSONHint(f *testing.F) {
	for _, s := range []string{"{}\n{}", "{\"a\": 1}\n", "{\n}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if !strings.HasPrefix(strings.TrimSpace(body), "[") && json.Valid([]byte(body)) {
			if _, err := splitRecords("application/json", []byte(body)); err != nil && strings.Contains(err.Error(), "x-ndjson") {
				t.Fatalf("%q is one JSON value, hinted as NDJSON", body)
			}
		}
	})
}

// A UTF-8 byte order mark before a body is skipped, as `run` and test runs skip it before
// their first line: NDJSON and an array each give their two events, byte for byte; a mark
// anywhere else stays (the second line's is part of that event, which the runtime refuses).
func TestSplitRecordsSkipsByteOrderMark(t *testing.T) {
	for _, c := range []struct{ ctype, body string }{
		{"application/x-ndjson", "\uFEFF{\"a\": 1}\n{\"b\": 2}\n"},
		{"application/json", "\uFEFF[{\"a\": 1}, {\"b\": 2}]"},
	} {
		got, err := splitRecords(c.ctype, []byte(c.body))
		if err != nil || len(got) != 2 || string(got[0]) != `{"a": 1}` || string(got[1]) != `{"b": 2}` {
			t.Errorf("%s: %q, %v; want {\"a\": 1} and {\"b\": 2}", c.ctype, got, err)
		}
	}
	got, err := splitRecords("application/x-ndjson", []byte("{\"a\": 1}\n\uFEFF{\"b\": 2}"))
	if err != nil || len(got) != 2 || string(got[1]) != "\uFEFF{\"b\": 2}" {
		t.Errorf("a mark on the second line: %q, %v", got, err)
	}
}
