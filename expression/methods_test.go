package expression

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/scenario-server/scenario-server/value"
)

// A SpEL habit, a method called on a value (#input.x.toString()), says that the values have
// no methods and what to write instead, when it runs on a string (expr: "invalid operation:
// int(string)"), a number ("cannot fetch toString from int") or a record ("cannot call nil"),
// and when it compiles on a value of a known type ("type string has no method toString").
func TestMethodsOfSpELSaySo(t *testing.T) {
	const hint = " (expressions are expr-lang, not SpEL: for toString() write string(x))"
	env := TypeEnv{"input": Unknown}
	for _, c := range []struct {
		text  string
		input value.Value
		want  string
	}{
		{"#input.x.toString()", value.NewRecord([]string{"x"}, []value.Value{value.String("7")}), "1:10: no method toString(): the values of events, records and variables have none" + hint},
		{"#input.x.toString()", value.NewRecord([]string{"x"}, []value.Value{value.Int(7)}), "1:10: no method toString(): the values of events, records and variables have none" + hint},
		{"1 + #input.toString()", value.NewRecord([]string{"x"}, []value.Value{value.Int(7)}), "1:12: no method toString(): the values of events, records and variables have none" + hint},
		{"#input.x.frobnicate()", value.NewRecord([]string{"x"}, []value.Value{value.String("7")}),
			"1:10: no method frobnicate(): the values of events, records and variables have none (expressions are expr-lang, not SpEL: values have no methods; see its functions)"},
	} {
		p, problems := Compile(c.text, env, Unknown)
		if problems != nil {
			t.Fatalf("%s: %v", c.text, problems)
		}
		_, err := Run(p, map[string]value.Value{"input": c.input})
		if err == nil || err.Error() != c.want {
			t.Errorf("%s on %s: %v; want %s", c.text, value.AppendJSON(nil, c.input), err, c.want)
		}
	}
	_, problems := Compile(`"7".toString()`, env, Unknown)
	if len(problems) != 1 || problems[0].Message != "type string has no method toString"+hint {
		t.Errorf(`"7".toString(): %+v`, problems)
	}
	// Field reads and functions are not methods: their errors stay expr's.
	p, _ := Compile("#input.x.y", env, Unknown)
	if _, err := Run(p, map[string]value.Value{"input": value.NewRecord([]string{"x"}, []value.Value{value.Int(7)})}); err == nil || strings.Contains(err.Error(), "method") {
		t.Errorf("#input.x.y on an integer: %v", err)
	}
}

// Each expression spelMethods offers compiles, its placeholders as variables of no known type.
func TestSpELMethodsInExprCompile(t *testing.T) {
	placeholder := regexp.MustCompile(`\b(x|s|y|key|from|to|separator|old|new)\b`)
	env := TypeEnv{}
	for _, n := range []string{"x", "s", "y", "key", "from", "to", "separator", "old", "new"} {
		env[n] = Unknown
	}
	for method, e := range spelMethods {
		text := placeholder.ReplaceAllString(e, "#$1")
		if _, problems := Compile(text, env, Unknown); problems != nil {
			t.Errorf("for %s(), %s (%s): %v", method, e, text, problems)
		}
	}
}

// null, as SpEL and JSON write it, says that expr writes nil (a new-user round: "unknown
// variable null (in scope: #input, #meta)").
func TestNullSaysNil(t *testing.T) {
	_, problems := Compile("#input.amount > 1000 && #input.time != null", TypeEnv{"input": Unknown, "meta": Unknown}, Unknown)
	want := "unknown variable null (expressions are expr-lang, not SpEL: null is written nil, as in #input.time != nil)"
	if len(problems) != 1 || problems[0].Message != want || problems[0].Column != 40 {
		t.Errorf("%+v; want %q at column 40", problems, want)
	}
	if _, problems := Compile("#input.time != nil", TypeEnv{"input": Unknown}, Unknown); problems != nil {
		t.Errorf("nil: %v", problems)
	}
}

// An unknown name in a method call's arguments is refused at validation, at its place (expr's
// checker does not look there: date(...).Format(#nope) passed, and every event failed "null
// where a string is taken": a hostile round); known ones, lets and functions pass.
func TestMethodArgumentsChecked(t *testing.T) {
	env := TypeEnv{"input": Unknown}
	for text, column := range map[string]int{
		`date("2024-01-01").Format(#nope)`: 27,
		`now().Add(#nope)`:                 11,
		`date("2024-01-01").Format(null)`:  27,
	} {
		_, problems := Compile(text, env, Unknown)
		if len(problems) != 1 || problems[0].Code != CodeUnknownName || problems[0].Column != column {
			t.Errorf("%s: %+v; want an unknown name at column %d", text, problems, column)
		}
	}
	for _, text := range []string{`date("2024-01-01").Format(#input.f)`, `let l = "2006"; date("2024-01-01").Format(l)`,
		`now().Add(duration("1h"))`, `map([1], date("2024-01-01").Add(duration(string(#) + "h")))`} {
		if _, problems := Compile(text, env, Unknown); problems != nil {
			t.Errorf("%s: %v", text, problems)
		}
	}
}

// A '#' before a word of the language or a function's name that is not called is an unknown
// variable at its '#' (a hostile round: #true was true, #nil and #len null); a variable of a
// function's name is read, a called function and expr's own # pointers keep their meaning.
func TestHashedWordsAndFunctions(t *testing.T) {
	env := TypeEnv{"input": Unknown}
	for text, column := range map[string]int{
		"#true":            1,
		"#nil":             1,
		"#input.a == #nil": 13,
		"1 #in [1]":        3,
		"#not true":        1,
		"#len":             1,
		"#input.n > #abs":  12,
	} {
		_, problems := Compile(text, env, Unknown)
		if len(problems) != 1 || problems[0].Code != CodeUnknownName || problems[0].Column != column || !strings.HasPrefix(problems[0].Message, "unknown variable #") {
			t.Errorf("%s: %+v; want an unknown variable at column %d", text, problems, column)
		}
	}
	for text, want := range map[string]value.Value{
		`#upper("ab")`:          value.String("AB"),
		`"#true"`:               value.String("#true"),
		`sum(map([1, 2], #))`:   value.Int(3),
		`#len + 1`:              value.Int(8), // a variable named len
		`sum(map([5], #index))`: value.Int(0),
	} {
		p, problems := Compile(text, TypeEnv{"input": Unknown, "len": Integer}, Unknown)
		if problems != nil {
			t.Errorf("%s: %v", text, problems)
			continue
		}
		got, err := Run(p, map[string]value.Value{"input": value.Int(1), "len": value.Int(7)})
		if err != nil || !value.Equal(got, want) {
			t.Errorf("%s = %v (%v); want %v", text, got, err, want)
		}
	}
}

// A SpEL method on a list or a record whose type is known (from a schema) says there is no
// such method and what to write, at the method's name (a hostile round: "array elements can
// only be selected using an integer", "unknown field"); a field that is not there keeps its
// own message.
func TestSpELMethodsOfTypedListsAndRecords(t *testing.T) {
	env := TypeEnv{"input": RecordOf(Field{Name: "a", Type: ListOf(Integer)}, Field{Name: "o", Type: RecordOf(Field{Name: "x", Type: Integer})})}
	for text, want := range map[string]string{
		"#input.a.size() > 1": "no method size(): lists and records have none (expressions are expr-lang, not SpEL: for size() write len(x))",
		"#input.o.toString()": "no method toString(): lists and records have none (expressions are expr-lang, not SpEL: for toString() write string(x))",
		"#input.o.keySet()":   "no method keySet(): lists and records have none (expressions are expr-lang, not SpEL: for keySet() write keys(x))",
		`#input.o.y == "b"`:   `unknown field "y" (fields: x)`,
		`#input.a.foo == "b"`: "array elements can only be selected using an integer (got string)",
	} {
		_, problems := Compile(text, env, Unknown)
		if len(problems) != 1 || problems[0].Message != want || problems[0].Column != 10 {
			t.Errorf("%s: %+v; want %q at column 10", text, problems, want)
		}
	}
}

// expr's and reflect's messages that named Go types say them in the expression's terms (a
// hostile round: "invalid operation: int([]interface {})" from a range of a list, "reflect:
// Call using string as type *time.Location").
func TestGoTypesSaidPlainly(t *testing.T) {
	input := value.NewRecord([]string{"a", "s", "n", "r"}, []value.Value{value.List([]value.Value{value.Int(1)}), value.String("5s"), value.Int(3),
		value.NewRecord([]string{"x"}, []value.Value{value.Int(1)})})
	for text, want := range map[string]string{
		"#input.a..3":                   "a range's bounds are integers, not a list",
		"1..#input.zz":                  "a range's bounds are integers, not null",
		"#input.a + 1":                  "invalid operation: a list + an integer",
		"-#input.a":                     "invalid operation: - a list",
		"duration(#input.s) + #input.a": "invalid operation: a duration + a list",
		"abs(#input.a)":                 "invalid argument for abs: a list",
		"int(#input.a)":                 "a list where an integer is taken",
		"#input.a ** 2":                 "a list where a number is taken",
		"#input.n in #input.n":          `operator "in" not defined on an integer`,
		"now().In(#input.s)":            "a string where a time zone is taken",
		"#input.zz.lat > 1":             "cannot fetch lat from null",
		"#input.n.foo":                  "cannot fetch foo from an integer",
		"#input.r[0]":                   "cannot use an integer to get an element from a record (its keys are strings)",
		"keys(#input.a)":                "cannot get keys from a list (only from a record)",
		"map(#input.r, #)":              "a record where a list is taken",
	} {
		p, problems := Compile(text, TypeEnv{"input": Unknown}, Unknown)
		if problems != nil {
			t.Errorf("%s: %v", text, problems)
			continue
		}
		_, err := Run(p, map[string]value.Value{"input": input})
		var re *RunError
		if !errors.As(err, &re) || re.Message != want {
			t.Errorf("%s: %v; want %q", text, err, want)
		}
	}
	for text, want := range map[string]string{
		`date("2024-01-01").Add("1h")`: `[1:24: a string where a duration is taken (an argument of Add) (expression-type)]`,
		"1 + true":                     "[1:3: invalid operation: + (an integer and a boolean) (expression-type)]",
		"now().year":                   "[1:7: a date has no field year (expression-type)]",
		"!1":                           "[1:1: invalid operation: ! (an integer) (expression-type)]",
	} {
		if _, problems := Compile(text, TypeEnv{"input": Unknown}, Unknown); fmt.Sprint(problems) != want {
			t.Errorf("%s: %v; want %s", text, problems, want)
		}
	}
}
