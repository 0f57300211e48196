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
	var lay layout
	inner := value.NewRecord([]string{"id", "tags"}, []value.Value{value.Int(9223372036854775807), value.List([]value.Value{value.String("x")})})
	input := value.NewRecord([]string{"a", "s", "n", "user"}, []value.Value{value.Int(1), value.String("str"), value.Null(), inner})
	vars := map[string]value.Value{"input": input, "other": value.Float(2.5)}
	// #nope is in scope but holds no value: a variable the event does not carry.
	env := expression.TypeEnv{"input": expression.Unknown, "other": expression.Unknown, "nope": expression.Unknown}
	for _, text := range []string{
		"#input", "#input.a", "#input.missing", "#input.user.id", "#input.user.tags", "input.user.id",
		"#input.s.x", "#input.n.x", "#input.missing.x", "#other", " #input . a ", "#nope",
		// Steps walk does not follow, which expr answers: a string's characters (a hostile
		// round: #input.s[0] was an error where (#input.s[0]) was 115), an index of a
		// record, a number or null, out of range.
		"#input.s[0]", "#input.s[2]", "#input.s[3]", "#input.user[0]", "#input.a[0]", "#input.n[0]",
		"#input.user.tags[0]", "#input.user.tags[1]",
	} {
		prog, problems := expression.Compile(text, env, expression.Unknown)
		if len(problems) > 0 {
			t.Errorf("%q does not compile: %v", text, problems)
			continue
		}
		ev := lay.newEvaluator(prog)
		if ev.path == nil {
			t.Errorf("%q: not taken as a path", text)
			continue
		}
		want, wantErr := expression.Run(prog, vars)
		got, gotErr := ev.eval(lay.eventOf(vars))
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
			t.Errorf("%q does not compile: %v", text, problems)
			continue
		}
		if lay.newEvaluator(prog).path != nil {
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

// Typed variables: the fast paths make expr's number conversions, and record
// literals of paths give expr's records.
func TestFastPathsAgreeWithExprOnTypes(t *testing.T) {
	var lay layout
	input := value.NewRecord([]string{"i", "f", "ni", "s", "tags", "geo"}, []value.Value{
		value.Float(5), value.Int(2), value.Float(7), value.String("x"), value.List([]value.Value{value.Int(1), value.Float(2)}),
		value.NewRecord([]string{"n", "x"}, []value.Value{value.Float(2), value.Int(3)}),
	})
	vars := map[string]value.Value{"input": input, "key": value.List([]value.Value{value.String("k"), value.Int(3)})}
	env := expression.TypeEnv{
		"input": expression.RecordOf(
			expression.Field{Name: "i", Type: expression.Integer},
			expression.Field{Name: "f", Type: expression.Float},
			expression.Field{Name: "ni", Type: expression.Integer.OrNull()},
			expression.Field{Name: "s", Type: expression.String},
			expression.Field{Name: "tags", Type: expression.ListOf(expression.Number)},
			// A record that may be null, whose fields are declared not null: #input.geo.n is
			// typed integer? but converted as an integer (a hostile round: the path gave 2.0
			// where expr gave 2).
			expression.Field{Name: "geo", Type: expression.RecordOf(
				expression.Field{Name: "n", Type: expression.Integer},
				expression.Field{Name: "x", Type: expression.Float}).OrNull()},
		),
		"key": expression.ListOf(expression.Unknown),
	}
	for _, text := range []string{
		"#input.i", "#input.f", "#input.ni", "#input.s", "#input.tags", "#input.tags[1]", "#key[0]", "#key[1]", "#input",
		"{a: #input.i, b: #input.f, c: #key[0], d: #input.ni}", "{t: #input.tags, k: #key[1]}", "{x: #key[5]}",
		"#input.geo.n", "#input.geo.x", "{n: #input.geo.n, x: #input.geo.x}", "#input.geo.n == 2", "#input.geo.x > 2.5",
	} {
		prog, problems := expression.Compile(text, env, expression.Unknown)
		if len(problems) > 0 {
			t.Fatalf("%q: %v", text, problems)
		}
		ev := lay.newEvaluator(prog)
		want, wantErr := expression.Run(prog, vars)
		got, gotErr := ev.eval(lay.eventOf(vars))
		if (wantErr != nil) != (gotErr != nil) {
			t.Errorf("%q: fast path error %v, expr error %v", text, gotErr, wantErr)
			continue
		}
		if wantErr == nil && string(value.AppendJSON(nil, got)) != string(value.AppendJSON(nil, want)) && !(text == "#input" && sameJSON(t, got, want)) {
			t.Errorf("%q: fast path %s, expr %s", text, value.AppendJSON(nil, got), value.AppendJSON(nil, want))
		}
	}
}

// Comparisons of a path with a literal agree with expr, whatever the kinds.
func TestComparisonFastPathAgreesWithExpr(t *testing.T) {
	var lay layout
	input := value.NewRecord([]string{"i", "f", "s", "b", "n", "big"}, []value.Value{
		value.Int(5), value.Float(2.5), value.String("sale"), value.Bool(true), value.Null(), value.Int(9007199254740993),
	})
	vars := map[string]value.Value{"input": input}
	env := expression.TypeEnv{"input": expression.Unknown}
	paths := []string{"#input.i", "#input.f", "#input.s", "#input.b", "#input.n", "#input.missing", "#input.big"}
	lits := []string{"5", "-3", "2.5", "1e1", `"sale"`, `'sald'`, "true", "false", "9007199254740992"}
	n := 0
	for _, p := range paths {
		for _, op := range []string{"==", "!=", "<", "<=", ">", ">="} {
			for _, lit := range lits {
				text := p + " " + op + " " + lit
				prog, problems := expression.Compile(text, env, expression.Unknown)
				// expr refuses only ordering against a boolean; any other
				// refusal is a broken case, not one to leave out.
				ordersBool := op != "==" && op != "!=" && (lit == "true" || lit == "false")
				if len(problems) > 0 {
					if !ordersBool {
						t.Errorf("%q does not compile: %v", text, problems)
					}
					continue
				}
				if ordersBool {
					t.Errorf("%q compiles: expected expr to refuse ordering against a boolean", text)
				}
				ev := lay.newEvaluator(prog)
				if ev.cmpPath == nil {
					t.Fatalf("%q not taken as a comparison", text)
				}
				agreesWithExpr(t, &lay, ev, prog, vars)
				n++
			}
		}
	}
	if n < 200 {
		t.Fatalf("only %d comparisons compiled", n)
	}
}

// agreesWithExpr checks that ev, prog's evaluator taking a shortcut, gives what expr gives for
// vars: the same value, or an error when expr's is one.
func agreesWithExpr(t *testing.T, lay *layout, ev *evaluator, prog *expression.Program, vars map[string]value.Value) {
	t.Helper()
	want, wantErr := expression.Run(prog, vars)
	got, gotErr := ev.eval(lay.eventOf(vars))
	if (wantErr != nil) != (gotErr != nil) || wantErr == nil && !value.Equal(got, want) {
		t.Errorf("%q: fast (%s, %v), expr (%s, %v)", prog.Text(), value.AppendJSON(nil, got), gotErr, value.AppendJSON(nil, want), wantErr)
	}
}

// eventOf returns a context holding vars.
func (l *layout) eventOf(vars map[string]value.Value) *event {
	for name := range vars {
		l.slot(name)
	}
	c := l.newEvent()
	for name, v := range vars {
		c.set(l.slotOf[name], v)
	}
	return &c
}

// len(path), alone or compared with a literal, agrees with expr whatever the value: lists and
// records are counted where they are held, anything else runs expr (a string's characters,
// its error for null, numbers and missing fields).
func TestLenFastPathAgreesWithExpr(t *testing.T) {
	var lay layout
	input := value.NewRecord([]string{"l", "r", "e", "s", "u", "n", "i"}, []value.Value{
		value.List([]value.Value{value.Int(1), value.Null(), value.String("x")}),
		value.NewRecord([]string{"a", "b"}, []value.Value{value.Int(1), value.Int(2)}),
		value.List(nil), value.String("ab"), value.String("żółć"), value.Null(), value.Int(7),
	})
	vars := map[string]value.Value{"input": input}
	env := expression.TypeEnv{"input": expression.Unknown}
	n := 0
	for _, p := range []string{"#input.l", "#input.r", "#input.e", "#input.s", "#input.u", "#input.n", "#input.i", "#input.missing", "#input", "#input.l[2]"} {
		for _, text := range []string{"len(" + p + ")", "len(" + p + ") > 2", "len(" + p + ") == 0", "len(" + p + ") != 3"} {
			prog, problems := expression.Compile(text, env, expression.Unknown)
			if len(problems) > 0 {
				t.Errorf("%q does not compile: %v", text, problems)
				continue
			}
			ev := lay.newEvaluator(prog)
			if ev.lenPath == nil && !ev.cmpLen {
				t.Fatalf("%q not taken as len of a path", text)
			}
			agreesWithExpr(t, &lay, ev, prog, vars)
			n++
		}
	}
	if n != 40 {
		t.Fatalf("%d cases compiled, want 40", n)
	}
}
