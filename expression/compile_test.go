package expression

import (
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/scenario"
)

var testEnv = TypeEnv{
	"input": RecordOf(
		Field{Name: "amount", Type: Integer},
		Field{Name: "country", Type: String},
		Field{Name: "price", Type: Number},
		Field{Name: "delay", Type: Integer.OrNull()},
		Field{Name: "tags", Type: ListOf(String)},
		Field{Name: "geo", Type: RecordOf(Field{Name: "lat", Type: Float}, Field{Name: "lon", Type: Float})},
	),
	"meta":  OpenRecordOf(Field{Name: "scenarioName", Type: String}),
	"total": Integer,
}

func TestCompileResultTypes(t *testing.T) {
	tests := []struct {
		text string
		want string
	}{
		{"#input.amount > 10", "boolean"},
		{"input.amount > 10", "boolean"}, // bare names work too
		{"#input.amount", "integer"},
		{"#input.price", "number"},      // from the declared type, not expr's "any"
		{"#input.delay", "integer?"},    // nullable stays nullable
		{"#input.geo.lat", "float"},     // nested records
		{"#input?.geo?.lat", "float?"},  // optional chaining may give null
		{"#input.tags", "list(string)"}, // lists keep their element type
		{"#input.amount + #total", "integer"},
		{"#input.amount / 2", "float"},
		{"#input.country + '#x'", "string"}, // '#' inside a string literal is left alone
		{"#meta.scenarioName", "string"},
		{"#meta.anything", "unknown"}, // open record
		{"[1, 2, 3]", "list(integer)"},
		{"{a: 1}", "record{...}"},
		{"nil", "null"},
		{"duration(\"1h\")", "duration"},
		{"parseTime(\"2001/01/01 00:47\", \"yyyy/MM/dd HH:mm\")", "integer"},
		{"toEpochMillis(\"2024-05-01T10:00:00Z\")", "integer"},
		{"map(#input.tags, # + \"!\")", "list(string)"},
		{"map(#input.tags, #index)", "list(integer)"}, // expr's own #index is kept
		{"// a comment with #input\n#total", "integer"},
	}
	for _, tt := range tests {
		prog, problems := Compile(tt.text, testEnv, Unknown)
		if len(problems) > 0 {
			t.Errorf("Compile(%q): %v", tt.text, problems)
			continue
		}
		if got := prog.Result().String(); got != tt.want {
			t.Errorf("Compile(%q) result %s, want %s", tt.text, got, tt.want)
		}
	}
}

func TestCompileProblemPositions(t *testing.T) {
	tests := []struct {
		name       string
		text       string
		want       Type
		code       string
		line, col  int
		msgContain string
	}{
		{"unknown variable on line 2, at its #", "#input.amount > 100\n  && #inptu.country == \"PL\"", Boolean, CodeUnknownName, 2, 6, "#inptu (did you mean #input?)"},
		{"unknown bare name", "inptu.amount", Unknown, CodeUnknownName, 1, 1, "unknown variable inptu"},
		{"unknown field after two refs", "#input.amount +\n  #input.amont", Unknown, CodeUnknownField, 2, 10, "did you mean amount?"},
		{"syntax error after refs, line 3", "#input.amount +\n#total +\n  )", Unknown, CodeSyntax, 3, 3, "unexpected token"},
		{"columns count code points", "\"żółć\" + #nope", Unknown, CodeUnknownName, 1, 10, "#nope"},
		{"tabs count as one column", "\t#nope", Unknown, CodeUnknownName, 1, 2, "#nope"},
		{"result type at first character", "  #input.amount", Boolean, CodeResultType, 1, 3, "must be a boolean, but it is an integer"},
		{"a list, with its article", "[1, 2]", Boolean, CodeResultType, 1, 1, "but it is a list(integer)"},
		{"nullable result where non-null needed", "#input.delay", Integer, CodeResultType, 1, 1, "integer or null"},
		{"null is never a boolean", "nil", Boolean, CodeResultType, 1, 1, "but it is null"},
		{"type error", "#input.country > 1", Unknown, CodeType, 1, 16, "invalid operation"},
		{"bad time pattern at its argument", "parseTime(#input.country, 'yyyy-qq')", Unknown, CodeTimePattern, 1, 27, "unknown pattern letter 'q'"},
		{"bad time zone at its argument", "parseTime(#input.country, 'yyyy', 'Mars/Base')", Unknown, CodeTimeZone, 1, 35, "Mars/Base"},
		{"empty", "  \n ", Unknown, CodeEmpty, 1, 1, "empty"},
		{"unterminated string: at the end of the text", "#input.country == \"PL", Unknown, CodeSyntax, 1, 22, "literal not terminated"},
		{"unclosed comment after a ref", "#total /* x", Unknown, CodeSyntax, 1, 12, "unclosed comment"},
		{"= for ==, at the =", "#input.country = 'PL'", Boolean, CodeSyntax, 1, 16, `unexpected token Operator("=") (did you mean ==?`},
		{"bad literal pattern, at matches", `#input.country matches "("`, Boolean, CodeType, 1, 16, "missing closing )"},
		// A pattern the optimizer folds into a constant is checked too, at matches (expr's
		// compiler used to panic on it, and the problem carried the goroutine's stack).
		{"bad constant pattern", `#input.country matches ("(" + "")`, Boolean, CodeType, 1, 16, "missing closing ): `(`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, problems := Compile(tt.text, testEnv, tt.want)
			if prog != nil || len(problems) != 1 {
				t.Fatalf("Compile(%q) = %v, %v; want one problem", tt.text, prog, problems)
			}
			p := problems[0]
			if p.Code != tt.code || p.Line != tt.line || p.Column != tt.col || !strings.Contains(p.Message, tt.msgContain) {
				t.Errorf("Compile(%q) problem %+v; want code %s at %d:%d containing %q", tt.text, p, tt.code, tt.line, tt.col, tt.msgContain)
			}
		})
	}
}

// TestInternalProblemHasNoStack: a problem's message, which goes to the client, never carries
// a goroutine stack.
func TestInternalProblemHasNoStack(t *testing.T) {
	msg := "1:1: error parsing regexp: missing closing ): `(`\ngoroutine 5 [running]:\nruntime/debug.Stack()\n"
	if got := internalProblem(scenario.Problem{Message: msg}).Message; got != "1:1: error parsing regexp: missing closing ): `(`" {
		t.Errorf("message %q", got)
	}
	if got := withoutStack("no stack here"); got != "no stack here" {
		t.Errorf("message %q", got)
	}
}

func TestCompileUnknownScope(t *testing.T) {
	// A nil env accepts any name: only syntax and literal types are checked.
	if _, problems := Compile("#whatever.x > 1 && #input", nil, Boolean); len(problems) > 0 {
		t.Errorf("nil env: %v", problems)
	}
	if _, problems := Compile("#whatever +", nil, Unknown); len(problems) != 1 || problems[0].Code != CodeSyntax {
		t.Errorf("nil env, syntax error: %v", problems)
	}
	// An empty env accepts none.
	if _, problems := Compile("#whatever", TypeEnv{}, Unknown); len(problems) != 1 || problems[0].Code != CodeUnknownName ||
		!strings.Contains(problems[0].Message, "no variables are in scope") {
		t.Errorf("empty env: %v", problems)
	}
}

func TestCompileVariables(t *testing.T) {
	prog, problems := Compile("#input.amount > #total && input.country == 'PL'", testEnv, Boolean)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	if got := strings.Join(prog.Variables(), ","); got != "input,total" {
		t.Errorf("Variables() = %s, want input,total", got)
	}
	if prog.Text() != "#input.amount > #total && input.country == 'PL'" {
		t.Errorf("Text() = %q", prog.Text())
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"x", "agg", "_tmp", "last1h", "count", "sum"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "1x", "a-b", "a b", "żółw", "in", "not", "nil", "true", "index", "acc", "$env"} {
		if err := CheckName(bad); err == nil {
			t.Errorf("CheckName(%q) = nil, want an error", bad)
		}
	}
}

func TestRewriteKeepsPointers(t *testing.T) {
	env := TypeEnv{"input": Unknown}
	tests := []struct{ in, out string }{
		{"#input.a", "input.a"},
		{"filter(x, # > 1)", "filter(x, # > 1)"},
		{"map(x, #index)", "map(x, #index)"},
		{"reduce(x, #acc + #)", "reduce(x, #acc + #)"},
		{"'#input' + #input", "'#input' + input"},
		{"`#input` + #input", "`#input` + input"},
		{"#input // #input", "input // #input"},
		{"#inputs", "inputs"}, // unknown names lose their '#' too, to be reported
	}
	for _, tt := range tests {
		if got := rewrite(tt.in, env).rewritten; got != tt.out {
			t.Errorf("rewrite(%q) = %q, want %q", tt.in, got, tt.out)
		}
	}
	// A variable named like a pointer is a variable.
	if got := rewrite("#index", TypeEnv{"index": Integer}).rewritten; got != "index" {
		t.Errorf("rewrite(#index) with a variable index = %q", got)
	}
}

func TestReadsClock(t *testing.T) {
	env := TypeEnv{"input": Unknown}
	for text, want := range map[string]bool{
		"now()":                        true,
		"#input.t > now().UnixMilli()": true,
		"now() - duration('1h')":       true,
		"#input.t":                     false,
		"'now()'":                      false,
		"date('2024-05-01T10:00:00Z')": false,
		"map([1, 2], # * 2)":           false,
		"let f = 1; f + len('now')":    false,
		"[now(), #input.t][1]":         true,
	} {
		p := mustCompile(t, text, env)
		if p.ReadsClock() != want {
			t.Errorf("%s: ReadsClock() = %v, want %v", text, p.ReadsClock(), want)
		}
	}
}

// A function named without a call is a problem at it, not a value: `#input.day == date`
// compared the function as null, false for every event, without a word (a hostile round).
// A variable of the same name, written #date, is a variable.
func TestFunctionNotCalled(t *testing.T) {
	env := TypeEnv{"input": Unknown, "date": Unknown}
	for _, tc := range []struct {
		text string
		col  int
	}{{"date", 1}, {"#input.day == date", 15}, {"len", 1}, {"[duration]", 2}, {"keys", 1}, {"parseTime", 1}} {
		_, problems := Compile(tc.text, env, Unknown)
		if len(problems) != 1 || problems[0].Code != CodeFunctionNotCalled || problems[0].Column != tc.col {
			t.Errorf("%q: %v; want function-not-called at column %d", tc.text, problems, tc.col)
		}
	}
	for _, text := range []string{"#date", `date("2024-01-01")`, "len([1])", "#input.day == #date", `keys({a: 1})`} {
		if _, problems := Compile(text, env, Unknown); len(problems) != 0 {
			t.Errorf("%q: %v; want none", text, problems)
		}
	}
}
