package expression

import (
	"testing"

	"github.com/scenario-server/scenario-server/value"
)

func TestRecordLiteralsKeepKeyOrder(t *testing.T) {
	env := TypeEnv{
		"input": RecordOf(Field{Name: "n", Type: Integer}, Field{Name: "s", Type: String}),
		"d":     Integer,
		"meta":  RecordOf(Field{Name: "eventTime", Type: Integer}),
		"u":     Unknown,
	}
	vars := map[string]value.Value{
		"input": record("s", value.String("PL"), "n", value.Int(2)),
		"d":     value.Int(4),
		"meta":  record("eventTime", value.Int(2000)),
		"u":     record("z", value.Int(1), "a", value.Int(2)),
	}
	tests := []struct{ text, want string }{
		{"{n: #input.n, d: #d, at: #meta.eventTime}", `{"n":2,"d":4,"at":2000}`},
		{"{z: {b: 1, a: 2}, a: [{y: 1, x: 2}, {x: 3, y: 4}]}", `{"z":{"b":1,"a":2},"a":[{"y":1,"x":2},{"x":3,"y":4}]}`},
		{"[{b: 1, a: 2}, {a: 3, b: 4}]", `[{"b":1,"a":2},{"a":3,"b":4}]`},
		{"#d > 1 ? {b: 1, a: 2} : {a: 1, b: 2}", `{"b":1,"a":2}`},
		{"#d < 1 ? {b: 1, a: 2} : {a: 1, b: 2}", `{"b":2,"a":1}`}, // the first literal with these keys wins
		{"map([1, 2], ({v: #, i: #index}))", `[{"v":1,"i":0},{"v":2,"i":1}]`},
		{"#d > 1 ? {b: 1, a: 2} : {c: 3}", `{"b":1,"a":2}`},
		{"let r = {b: 1, a: 2}; r", `{"b":1,"a":2}`},
		{"{b: {y: 1, x: 2}.x, a: 1}", `{"b":2,"a":1}`},
		{"{'b c': 1, \"a\": 2}", `{"b c":1,"a":2}`},
		{"{a: 1, b: 2, a: 3}", `{"a":1,"b":2}`}, // a key written twice: its first place, expr's value
		{"{}", `{}`},
		// Records that come from variables keep their own key order.
		{"{r: #input, u: #u}", `{"r":{"s":"PL","n":2},"u":{"z":1,"a":2}}`},
		{"#input", `{"s":"PL","n":2}`},
		{"[#u, #input]", `[{"z":1,"a":2},{"s":"PL","n":2}]`},
		{"#d > 1 ? #u : {a: 0, z: 0}", `{"z":1,"a":2}`},
		{"#d < 1 ? #u : {a: 0, z: 0}", `{"a":0,"z":0}`},
		{"map([1], #u)", `[{"z":1,"a":2}]`},
		{"{a: 5, z: 6}", `{"a":5,"z":6}`}, // a literal with #u's keys keeps its own order
		// Field access, in, len and comparisons still work on literals.
		{"{a: 1}.a", "1"},
		{"{a: 1}['a']", "1"},
		{"{a: 1}?.b", "null"},
		{"'a' in {a: 1}", "true"},
		{"'b' in {a: 1}", "false"},
		{"len({a: 1, b: 2})", "2"},
		{"{a: 1, b: 2} == {b: 2, a: 1}", "true"},
		{"{a: 1} != {a: 2}", "true"},
		{"keys({b: 1, a: 2}) | sort()", `["a","b"]`},
		{"{a: {b: #input.n}}.a.b * 3", "6"},
	}
	for _, tt := range tests {
		prog := mustCompile(t, tt.text, env)
		got, err := Run(prog, vars)
		if err != nil {
			t.Errorf("Run(%q): %v", tt.text, err)
			continue
		}
		if s := string(value.AppendJSON(nil, got)); s != tt.want {
			t.Errorf("Run(%q) = %s, want %s", tt.text, s, tt.want)
		}
	}
}

func TestRecordLiteralResultTypeUnchanged(t *testing.T) {
	// Compiling a record literal as a list of its values must not change the
	// type the checker inferred, which nodes report.
	prog := mustCompile(t, "{n: 1, d: 'x'}", TypeEnv{})
	if got := prog.Result().String(); got != "record{...}" {
		t.Errorf("result type %s, want record{...}", got)
	}
}
