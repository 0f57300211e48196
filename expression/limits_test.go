package expression

import (
	"strings"
	"testing"
)

// compileProblem compiles text with opts and returns the code, line and
// column of its only problem, or "" when it compiles.
func compileProblem(t *testing.T, text string, opts Options) (code string, line, col int) {
	t.Helper()
	prog, problems := CompileWith(text, nil, Unknown, opts)
	if len(problems) == 0 {
		if prog == nil {
			t.Fatalf("%.60q: no program and no problems", text)
		}
		return "", 0, 0
	}
	if len(problems) != 1 {
		t.Fatalf("%.60q: %v", text, problems)
	}
	return problems[0].Code, problems[0].Line, problems[0].Column
}

func TestCompileLengthLimit(t *testing.T) {
	tests := []struct {
		name, text string
		max        int
		code       string
		line, col  int
	}{
		// "1 + 2 + 3" is 9 bytes.
		{"at the limit", "1 + 2 + 3", 9, "", 0, 0},
		{"one byte past", "1 + 2 + 3", 8, CodeTooLong, 1, 9}, // the 9th character, '3', starts past 8 bytes
		// "'żż'" is 6 bytes: ' (1) ż (2) ż (2) ' (1). With 4 allowed, the
		// second ż (bytes 3-4) is the first character that does not fit
		// whole: column 3.
		{"multi-byte", "'żż'", 4, CodeTooLong, 1, 3},
		// "1 +\n" is bytes 0-3, "2 +\n" bytes 4-7: with 7 allowed, byte 7,
		// the second '\n', is the first past the limit: line 2, column 4.
		{"on a later line", "1 +\n2 +\n3", 7, CodeTooLong, 2, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, line, col := compileProblem(t, tt.text, Options{Limits: Limits{MaxLength: tt.max}})
			if code != tt.code || line != tt.line || col != tt.col {
				t.Errorf("got %q at %d:%d, want %q at %d:%d", code, line, col, tt.code, tt.line, tt.col)
			}
		})
	}
	// The default, 65,536 bytes: "1" and 65,535 spaces compile, one
	// space more is too long, located at column 65,537.
	text := "1" + strings.Repeat(" ", DefaultMaxLength-1)
	if code, _, _ := compileProblem(t, text, Options{}); code != "" {
		t.Errorf("%d bytes: %s", len(text), code)
	}
	if code, line, col := compileProblem(t, text+" ", Options{}); code != CodeTooLong || line != 1 || col != DefaultMaxLength+1 {
		t.Errorf("%d bytes: %q at %d:%d", len(text)+1, code, line, col)
	}
}

func TestCompileDepthLimit(t *testing.T) {
	nest := func(open, inner, close string, n int) string {
		return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
	}
	kinds := []struct {
		name              string
		open, inner, shut string
	}{
		{"parentheses", "(", "1", ")"},
		{"lists", "[", "1", "]"},
		{"records", "{a: ", "1", "}"},
		{"calls", "abs(", "1", ")"},
		{"minus", "-", "1", ""},
		{"plus", "+", "1", ""},
		{"bang", "!", "true", ""},
		{"not", "not ", "true", ""},
		{"minus and parentheses", "-(", "1", ")"}, // two levels each
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			perLevel := 1
			if k.name == "minus and parentheses" {
				perLevel = 2
			}
			// 128 levels: compiles. One level more: the bracket or
			// operator that opens level 129 is in the (n+1)th copy of
			// open, which starts at column n*len(open)+1 (ASCII); in
			// "abs(" the level opens at its '(', 3 columns further.
			n := DefaultMaxDepth / perLevel
			if code, _, _ := compileProblem(t, nest(k.open, k.inner, k.shut, n), Options{}); code != "" {
				t.Fatalf("%d levels: %s", n*perLevel, code)
			}
			code, line, col := compileProblem(t, nest(k.open, k.inner, k.shut, n+1), Options{})
			wantCol := n*len(k.open) + 1
			if k.open == "abs(" {
				wantCol += 3
			}
			if code != CodeTooDeep || line != 1 || col != wantCol {
				t.Errorf("%d levels: %q at %d:%d, want %q at 1:%d", (n+1)*perLevel, code, line, col, CodeTooDeep, wantCol)
			}
		})
	}
	t.Run("small limit", func(t *testing.T) {
		// -(-(1)): '-' 1, '(' 2, '-' 3, '(' 4.
		opts := Options{Limits: Limits{MaxDepth: 4}}
		if code, _, _ := compileProblem(t, "-(-(1))", opts); code != "" {
			t.Errorf("4 levels: %s", code)
		}
		opts.Limits.MaxDepth = 3
		if code, line, col := compileProblem(t, "-(-(1))", opts); code != CodeTooDeep || line != 1 || col != 4 {
			t.Errorf("4 levels, 3 allowed: %q at %d:%d, want at 1:4", code, line, col)
		}
	})
	t.Run("not nesting", func(t *testing.T) {
		opts := Options{Limits: Limits{MaxDepth: 2}}
		for _, text := range []string{
			// Brackets closed before the next open do not add up.
			"(1) + (2) + [3][0] + abs(4) + abs(5)",
			// A binary minus is no unary operator; unary ones end at the
			// next binary operator: at most 2 levels here (-(1)).
			"1 - 2 - -3 - -(4) - - 5",
			"not true and !false or not !true",
			// Brackets inside strings and comments are text.
			"'((((([[[[{{{{' + \"))))\" + `((((` /* (((((( */",
			"len(#input) - 1", // with a nil scope any name compiles
			"filter([1, 2], # - 1 > 0)",
		} {
			if code, line, col := compileProblem(t, text, opts); code == CodeTooDeep {
				t.Errorf("%q: too deep at %d:%d", text, line, col)
			}
		}
	})
}

// TestCompileNodeLimit: expr's parser counts every node it makes; "1 + 2
// + 3" makes five (three integers, two +).
func TestCompileNodeLimit(t *testing.T) {
	if code, _, _ := compileProblem(t, "1 + 2 + 3", Options{Limits: Limits{MaxNodes: 5}}); code != "" {
		t.Errorf("5 nodes: %s", code)
	}
	code, line, col := compileProblem(t, "1 + 2 + 3", Options{Limits: Limits{MaxNodes: 4}})
	if code != CodeTooLarge {
		t.Errorf("5 nodes, 4 allowed: %q", code)
	}
	checkPosition(t, "1 + 2 + 3", line, col)
	// The default, 10,000: "1" and 4,999 "+1" make 9,999 nodes, 5,000
	// make 10,001.
	if code, _, _ := compileProblem(t, "1"+strings.Repeat("+1", 4999), Options{}); code != "" {
		t.Errorf("9,999 nodes: %s", code)
	}
	if code, _, _ := compileProblem(t, "1"+strings.Repeat("+1", 5000), Options{}); code != CodeTooLarge {
		t.Errorf("10,001 nodes: %q", code)
	}
	_, problems := Compile("1"+strings.Repeat("+1", 5000), nil, Unknown)
	if !strings.Contains(problems[0].Message, "10000") {
		t.Errorf("the message does not name the limit: %s", problems[0].Message)
	}
}

// TestCompileIssueNesting: the texts of the issue, a million levels of
// nesting, fail with a limit's code instead of overflowing the stack:
// too long under the default limits, and too deep when the length is
// allowed (so that the depth scan itself reads the million levels).
func TestCompileIssueNesting(t *testing.T) {
	const n = 1_000_000
	texts := map[string]string{
		"(":        strings.Repeat("(", n) + "1" + strings.Repeat(")", n),
		"-":        strings.Repeat("-", n) + "1",
		"!":        strings.Repeat("!", n) + "true",
		"[":        strings.Repeat("[", n) + strings.Repeat("]", n),
		"calls":    strings.Repeat("abs(", n) + "1" + strings.Repeat(")", n),
		"not":      strings.Repeat("not ", n) + "true",
		"#refs":    strings.Repeat("(#input + ", n) + "1" + strings.Repeat(")", n),
		"unclosed": strings.Repeat("{a: [(", n),
	}
	for name, text := range texts {
		t.Run(name, func(t *testing.T) {
			for _, env := range []TypeEnv{nil, testEnv} {
				if _, problems := Compile(text, env, Unknown); len(problems) != 1 || problems[0].Code != CodeTooLong {
					t.Errorf("default limits: %v", problems)
				}
				_, problems := CompileWith(text, env, Unknown, Options{Limits: Limits{MaxLength: len(text)}})
				if len(problems) != 1 || problems[0].Code != CodeTooDeep {
					t.Fatalf("length allowed: %v", problems)
				}
				checkPosition(t, text, problems[0].Line, problems[0].Column)
				if !strings.Contains(problems[0].Message, "128") {
					t.Errorf("the message does not name the limit: %s", problems[0].Message)
				}
			}
		})
	}
}
