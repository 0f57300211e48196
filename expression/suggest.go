package expression

import (
	"sort"
	"strings"

	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser/lexer"
	"github.com/expr-lang/expr/parser/utils"
)

// Suggestion is one completion for the editor.
//
// Label is what the list shows ("#input", "origin", "len"); Insert is the
// text that replaces the characters from Start (a rune offset in the text)
// to the caret. Kind is "variable", "field" or "function".
type Suggestion struct {
	Label  string `json:"label"`
	Insert string `json:"insert"`
	Start  int    `json:"start"`
	Kind   string `json:"kind"`
	Type   *Type  `json:"type,omitempty"`
}

// Suggest lists completions at caret (a rune offset into text; it is
// clamped to the text) for variables in env:
//
//   - after "#in" or "in": the variables whose names start with "in" (with
//     the '#' when one was typed) and, without '#', the functions too;
//   - after "#input.or" or "#input.": the fields of #input's record type
//     that start with "or", also through nested records ("#input.geo.");
//
// sorted by label. Inside a string literal, or after a field path that does
// not lead to a record, it returns nothing.
func Suggest(text string, caret int, env TypeEnv) []Suggestion {
	runes := []rune(text)
	caret = max(0, min(caret, len(runes)))
	if insideString(string(runes[:caret])) {
		return nil
	}
	// Walk back over the reference: identifiers, dots, '?.' and a leading '#'.
	start := caret
	for start > 0 {
		r := runes[start-1]
		if utils.IsAlphaNumeric(r) || r == '.' || r == '?' {
			start--
			continue
		}
		break
	}
	hash := start > 0 && runes[start-1] == '#'
	chain := strings.ReplaceAll(string(runes[start:caret]), "?.", ".")
	parts := strings.Split(chain, ".")
	prefix := parts[len(parts)-1]
	prefixStart := caret - len([]rune(prefix))
	if len(parts) == 1 {
		return suggestNames(env, prefix, hash, prefixStart)
	}
	if parts[0] == "" {
		return nil
	}
	t, ok := env[parts[0]]
	if !ok {
		return nil
	}
	for _, p := range parts[1 : len(parts)-1] {
		if t.Kind != KindRecord {
			return nil
		}
		if t, ok = t.Field(p); !ok {
			return nil
		}
	}
	if t.Kind != KindRecord {
		return nil
	}
	var out []Suggestion
	for _, f := range t.Fields {
		if strings.HasPrefix(f.Name, prefix) {
			ft := f.Type
			out = append(out, Suggestion{Label: f.Name, Insert: f.Name, Start: prefixStart, Kind: "field", Type: &ft})
		}
	}
	return out
}

func suggestNames(env TypeEnv, prefix string, hash bool, start int) []Suggestion {
	var out []Suggestion
	for _, name := range env.Names() {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		t := env[name]
		label := name
		if hash {
			label = "#" + name
		}
		out = append(out, Suggestion{Label: label, Insert: name, Start: start, Kind: "variable", Type: &t})
	}
	if hash {
		return out
	}
	funcs := append([]string{FuncParseTime, FuncToEpochMillis}, builtin.Names...)
	sort.Strings(funcs)
	for _, f := range funcs {
		if prefix != "" && strings.HasPrefix(f, prefix) {
			out = append(out, Suggestion{Label: f, Insert: f, Start: start, Kind: "function"})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Label < out[j].Label })
	return out
}

// insideString reports whether text ends inside a string literal or a
// comment, by lexing it with expr's lexer.
func insideString(text string) bool {
	l := lexer.New()
	l.Reset(file.NewSource(text))
	for {
		t, err := l.Next()
		if err != nil {
			msg := err.Error()
			return strings.Contains(msg, "literal not terminated") || strings.Contains(msg, "unclosed comment")
		}
		if t.Kind == lexer.EOF {
			return lineComment(text)
		}
	}
}

// lineComment reports whether the last line of text has a // comment
// outside string literals (the lexer skips comments silently).
func lineComment(text string) bool {
	line := text[strings.LastIndexByte(text, '\n')+1:]
	quote := rune(0)
	prev := rune(0)
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote && prev != '\\' {
				quote = 0
			}
		case r == '"' || r == '\'' || r == '`':
			quote = r
		case r == '/' && prev == '/':
			return true
		}
		prev = r
	}
	return false
}
