package expression

import (
	"strings"
	"testing"
	"unicode/utf8"
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
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, env := range []TypeEnv{testEnv, nil} {
			prog, problems := Compile(text, env, Boolean)
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
