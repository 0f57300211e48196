package expression

import (
	"errors"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/scenario-server/scenario-server/value"
)

// FuzzCompileExpression compiles arbitrary text, with #references, in a
// typed scope and in an unknown one. Compile must never panic nor fail
// inside expr, and every problem must point at a position within the text
// (the end of the text included).
func FuzzCompileExpression(f *testing.F) {
	for _, seed := range []string{
		"#input.amount > 10",
		"#input.amount > 100\n  && #inptu.country == \"PL\"",
		"#input.a +\n  #input.b )",
		"map(#input.tags, # + #index)",
		"reduce(#input.tags, #acc + len(#), 0)",
		"'#input' + `#meta` // #key\n#total",
		"/* #input */ #meta.scenarioName",
		"parseTime(#input.country, 'yyyy/MM/dd HH:mm', 'Europe/Warsaw')",
		"toEpochMillis(#input.country)",
		"\"żółć\" + #nope",
		"#input?.geo?.lat ?? 0.0",
		"let x = #total; x * 2",
		"#input.amount > 0 ? #input.country : nil",
		"{a: #input.amount, b: [#total, 1]}",
		"##", "#", "#.x", "#1", "# input", "#input.", "#input[", "\xff#input",
		// Deep and long texts: past the limits, at them, and deep in
		// ways the depth scan does not count (bounded by the node count).
		strings.Repeat("(", 200) + "1" + strings.Repeat(")", 200),
		strings.Repeat("(", 128) + "1" + strings.Repeat(")", 128),
		strings.Repeat("-", 1000) + "1",
		strings.Repeat("!", 129) + "true",
		strings.Repeat("not ", 300) + "true",
		strings.Repeat("[", 500),
		strings.Repeat("abs(", 200) + "1" + strings.Repeat(")", 200),
		strings.Repeat("{a: ", 150) + "1" + strings.Repeat("}", 150),
		strings.Repeat("-(", 70) + "#input.amount" + strings.Repeat(")", 70),
		"1" + strings.Repeat(" ** 1", 3000),
		"true" + strings.Repeat(" ? 1 : true", 2000),
		strings.Repeat("let x = 1; ", 2000) + "x",
		"1" + strings.Repeat("+1", 5000),
		"'" + strings.Repeat("(", 70000) + "'",
		"1 " + strings.Repeat("ż", 40000),
		strings.Repeat("#input.amount + ", 5000) + "1",
	} {
		f.Add(seed)
	}
	small := Options{Limits: Limits{MaxLength: 64, MaxDepth: 4, MaxNodes: 16}}
	f.Fuzz(func(t *testing.T, text string) {
		for _, env := range []TypeEnv{testEnv, nil} {
			for _, opts := range []Options{{}, small} {
				prog, problems := CompileWith(text, env, Boolean, opts)
				if prog == nil && len(problems) == 0 {
					t.Fatalf("Compile(%q): no program and no problems", text)
				}
				for _, p := range problems {
					if p.Code == CodeInternalError {
						t.Fatalf("Compile(%q): %v", text, p)
					}
					checkPosition(t, text, p.Line, p.Column)
				}
			}
		}
		for caret := 0; caret <= utf8.RuneCountInString(text) && caret < 64; caret += 7 {
			for _, s := range Suggest(text, caret, testEnv) {
				if s.Start < 0 || s.Start > caret {
					t.Fatalf("Suggest(%q, %d): start %d", text, caret, s.Start)
				}
			}
		}
	})
}

// checkPosition fails unless line:column lies within text: 1-based, and at
// most one column past the end of its line.
func checkPosition(t *testing.T, text string, line, column int) {
	t.Helper()
	lines := strings.Split(text, "\n")
	if line < 1 || line > len(lines) {
		t.Fatalf("%q: line %d outside 1..%d", text, line, len(lines))
	}
	if n := utf8.RuneCountInString(lines[line-1]); column < 1 || column > n+1 {
		t.Fatalf("%q: column %d outside 1..%d on line %d", text, column, n+1, line)
	}
}

// FuzzRunExpression runs what compiles, in testEnv, on several sets of
// variables (following the types, missing, null, of other types). Run must
// not panic, its errors must be *RunErrors located within the text, and it
// must give what the general program (whole variables, no bound field
// paths) gives.
func FuzzRunExpression(f *testing.F) {
	for _, seed := range []string{
		"#input.amount > 10",
		"#input.amount * 2 + #total",
		"#input.geo.lat * 2.5",
		"{a: #input.country, b: [#input.geo, #input?.geo?.lon], c: {y: 1, x: #total}}",
		"map(#input.tags, {t: #, n: #index})",
		"sum(#input.tags, len(#)) + #input.amount",
		"#input.delay ?? -#total",
		"#meta.scenarioName + #meta.other",
		"#input.amount % #total / 3",
		"let x = #input.geo; x.lat",
		"$env.total",
		"let r = 1..999; all(r, all(r, all(r, true)))",
		"len(repeat(repeat('x', 999), 999))",
		"reduce(1..40, #acc + #acc, #input.country)",
		"join(map(1..99, #input.tags), '-')",
		"toJSON(map(1..9, #input))",
		"count(1..99) + len(split(repeat('ab', 99), ''))",
		"uniq(#input.tags) == #input.tags && #input.geo in [#input.geo, {}]",
		"max([#input.amount, [#total, 2.5]]) + mean(1..9) + median([3, 1])",
		"let a = [#input.tags, #input.tags]; let b = [a, a]; uniq([b, b, 1, 1.0])",
	} {
		f.Add(seed)
	}
	// Small budgets keep every run short, and make the fuzzer meet them.
	opts := Options{Budget: Budget{Steps: 10_000, Memory: 1 << 20}}
	varSets := []map[string]value.Value{
		{
			"input": value.NewRecord(
				[]string{"amount", "country", "price", "delay", "tags", "geo"},
				[]value.Value{value.Int(math.MaxInt64), value.String("PL"), value.Float(2.5), value.Null(),
					value.List([]value.Value{value.String("a"), value.String("bc")}),
					value.NewRecord([]string{"lat", "lon"}, []value.Value{value.Float(52.2), value.Int(21)})}),
			"meta":  value.NewRecord([]string{"scenarioName", "other"}, []value.Value{value.String("s"), value.Int(1)}),
			"total": value.Int(-3),
		},
		{
			"input": value.NewRecord([]string{"amount", "geo", "tags"}, []value.Value{value.Float(1.5), value.String("x"), value.Null()}),
			"total": value.Int(0),
		},
		{"input": value.Null(), "meta": value.Int(1)},
		{},
	}
	f.Fuzz(func(t *testing.T, text string) {
		// Short texts; the budgets bound what they do.
		if len(text) > 80 {
			return
		}
		prog, problems := CompileWith(text, testEnv, Unknown, opts)
		if len(problems) > 0 {
			return
		}
		for _, vars := range varSets {
			got, err := Run(prog, vars)
			if err != nil {
				var re *RunError
				if !errors.As(err, &re) {
					t.Fatalf("Run(%q): %T %v, not a *RunError", text, err, err)
				}
				if re.Line > 0 {
					checkPosition(t, text, re.Line, re.Column)
				}
			}
			if prog.allVars {
				continue
			}
			want := describe(runGeneral(prog, vars))
			if g := describe(got, err); g != want {
				t.Fatalf("Run(%q) = %s; the general program gives %s", text, g, want)
			}
			// Fields given in place (FieldVars, as the engine's lazy records
			// do) give the same.
			if g := describe(RunVars(prog, &fieldVars{vars: Map(vars)})); g != describe(got, err) {
				t.Fatalf("Run(%q) = %s; with fields given in place %s", text, describe(got, err), g)
			}
		}
	})
}
