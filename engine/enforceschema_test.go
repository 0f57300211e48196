package engine

import (
	"fmt"
	"testing"

	"github.com/scenario-server/scenario-server/value"
)

// A source that enforces its schema checks a record pushed as JSON and one pushed already
// decoded (PushValue, as a deployment's HTTP source without timestamp does) alike: every
// JSON kind reaches the schema as what it is (an integer is an integer, 2.5 is not). The
// expected problems are worked by hand from the schema.
func TestEnforceSchemaOnPushedValues(t *testing.T) {
	schema := `{"type": "object", "required": ["n"], "properties": {
		"n": {"type": "integer"}, "x": {"type": "number"}, "ok": {"type": "boolean"}, "none": {"type": "null"},
		"tags": {"type": "array", "items": {"type": "string"}}, "sub": {"type": "object", "required": ["k"]}}}`
	sc := scenarioJSON([]string{
		`{"id": "in", "type": "Source", "ref": {"typ": "http", "parameters": [
			{"name": "schema", "value": ` + schema + `}, {"name": "enforceSchema", "value": true}]}}`,
		sinkNode("out", "#input.n"),
	}, []string{link("in", "out")})
	e, written, _ := writingEngine(t, sc)
	records := []struct{ json, problem string }{
		{`{"n": 1, "x": 2, "ok": true, "none": null, "tags": ["a"], "sub": {"k": 1}}`, ""},
		{`{"n": 2, "x": 2.5}`, ""},
		{`{"n": 2.5}`, "/n: got number, want integer"},
		{`{"n": 3, "ok": "true"}`, "/ok: got string, want boolean"},
		{`{"n": 4, "none": 0}`, "/none: got number, want null"},
		{`{"n": 5, "tags": ["a", false]}`, "/tags/1: got boolean, want string"},
		{`{"n": 6, "sub": {}}`, "/sub: missing property 'k'"},
		{`{"x": 1}`, "/: missing property 'n'"},
	}
	var want []string
	for i, r := range records {
		v, err := value.ParseJSON([]byte(r.json))
		if err != nil {
			t.Fatal(err)
		}
		line := int64(i + 1)
		if i%2 == 0 {
			err = e.PushValue("in", v, 0, line)
		} else {
			err = e.PushJSON("in", []byte(r.json), line)
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.problem != "" {
			want = append(want, fmt.Sprintf("%d schema %s", line, r.problem))
		}
	}
	e.Flush()
	var got []string
	errs, _ := e.Errors()
	for _, x := range errs {
		got = append(got, fmt.Sprintf("%d %s %s", x.Line, x.Field, x.Message))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("errors\n%q\nwant\n%q", got, want)
	}
	if c := e.Counts()["in"]; c.In != 8 || c.Out != 2 || c.Errors != 6 {
		t.Errorf("source counts %+v, want in 8, out 2, errors 6", c)
	}
	if *written != 2 {
		t.Errorf("%d values written, want 2", *written)
	}
}
