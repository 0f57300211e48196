package engine

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/scenario-server/scenario-server/expression"
	"github.com/scenario-server/scenario-server/value"
)

// The path fast path must give what expr gives: the same value, or an
// error where expr has one.
func TestPathEvaluatorAgreesWithExpr(t *testing.T) {
	inner := value.NewRecord([]string{"id", "tags"}, []value.Value{value.Int(9223372036854775807), value.List([]value.Value{value.String("x")})})
	input := value.NewRecord([]string{"a", "s", "n", "user"}, []value.Value{value.Int(1), value.String("str"), value.Null(), inner})
	vars := map[string]value.Value{"input": input, "other": value.Float(2.5)}
	env := expression.TypeEnv{"input": expression.Unknown, "other": expression.Unknown}
	for _, text := range []string{
		"#input", "#input.a", "#input.missing", "#input.user.id", "#input.user.tags", "input.user.id",
		"#input.s.x", "#input.n.x", "#input.missing.x", "#other", " #input . a ", "#nope",
	} {
		prog, problems := expression.Compile(text, env, expression.Unknown)
		if len(problems) > 0 {
			t.Logf("%q does not compile (%v): skipped", text, problems[0].Message)
			continue
		}
		ev := newEvaluator(prog)
		if ev.path == nil {
			t.Errorf("%q: not taken as a path", text)
			continue
		}
		want, wantErr := expression.Run(prog, vars)
		got, gotErr := ev.eval(&ctx{vars: vars})
		if (wantErr != nil) != (gotErr != nil) {
			t.Errorf("%q: fast path error %v, expr error %v", text, gotErr, wantErr)
			continue
		}
		// Records compare without regard to key order: expr hands back Go
		// maps (sorted keys), the fast path the record as decoded.
		if wantErr == nil && !sameJSON(t, got, want) {
			t.Errorf("%q: fast path %s, expr %s", text, value.AppendJSON(nil, got), value.AppendJSON(nil, want))
		}
	}
	for _, text := range []string{"#input.a + 1", "#input.a > 0", "true", "#input['a']", "len(#input.s)"} {
		prog, problems := expression.Compile(text, env, expression.Unknown)
		if len(problems) > 0 {
			continue
		}
		if newEvaluator(prog).path != nil {
			t.Errorf("%q taken as a path", text)
		}
	}
}

func sameJSON(t *testing.T, a, b value.Value) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(value.AppendJSON(nil, a), &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(value.AppendJSON(nil, b), &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}
