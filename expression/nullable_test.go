package expression

import (
	"fmt"
	"testing"
)

// Values that may be null are checked as if present as well (checkPresent): a string field
// that is not required, multiplied by a number, is a type error at its operator, where it
// passed validation and failed every event; comparing with null and defaulting it stay
// valid. Worked out by hand against expr's operators.
func TestNullableValuesTypeChecked(t *testing.T) {
	input := RecordOf(Field{Name: "time", Type: Type{Kind: KindString, Nullable: true}},
		Field{Name: "amount", Type: Type{Kind: KindFloat, Nullable: true}},
		Field{Name: "n", Type: Type{Kind: KindInteger, Nullable: true}})
	env := TypeEnv{"input": input}
	for _, tc := range []struct{ text, want string }{
		{"#input.time * 1000", "[1:13: invalid operation: * (a string and an integer) (expression-type)]"},
		{`#input.amount + "x"`, "[1:15: invalid operation: + (a float and a string) (expression-type)]"},
		{"len(#input.amount)", "[1:1: invalid argument for len: a float (expression-type)]"},
		{"#input.time == nil", "[]"},
		{"nil == #input.time", "[]"},
		{`#input.time != nil ? #input.time : "d"`, "[]"},
		{"#input.n ?? 0", "[]"},
		{`#input.time in ["a", nil]`, "[]"},
		{"#input.n + #input.amount", "[]"},
		{"#input.n > 3", "[]"},
	} {
		if _, p := Compile(tc.text, env, Type{Kind: KindUnknown}); fmt.Sprint(p) != tc.want {
			t.Errorf("%s: %v, want %s", tc.text, p, tc.want)
		}
	}
}
