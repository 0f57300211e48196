package expression

import (
	"strings"

	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser/lexer"
)

// pointerNames are expr's own #-names, valid inside predicates such as
// filter(list, #index > 0) or reduce(list, #acc + #). They keep expr's
// meaning unless a variable in scope has the same name; ReservedNames
// keeps users from defining one.
var pointerNames = map[string]bool{"index": true, "acc": true}

// source is an expression as the user wrote it (original) and as expr reads
// it (rewritten: every Nussknacker reference #name turned into the bare
// identifier name), with the map between their positions.
type source struct {
	original  string
	rewritten string
	// toOriginal[j] is the rune offset in original of rune j of rewritten;
	// its last element, at len(rewritten in runes), is the length of
	// original in runes.
	toOriginal []int
	// hashed holds the rewritten rune offsets of identifiers that lost a
	// '#', so that errors about them point at the '#' the user typed.
	hashed map[int]bool
	// env is the scope, for messages about unknown names.
	env TypeEnv
	// idents are the identifiers the text has (variables among them), and
	// readsEnv whether it names $env: the type checker is given only the
	// variables the expression names, however large the scope.
	idents   map[string]bool
	readsEnv bool
	// hashedWord is the rune offset in original of the first '#' before a word of the
	// language (#true, #nil: not variables, CheckName refuses them as names), and word that
	// word; -1 when there is none.
	hashedWord int
	word       string
}

// NamedEnv is the part of env that text can read: the variables it names, or all of env
// when it reads $env (nil for a nil env). Compiling text converts each of their types for
// expr's type checker, and the Program keeps the conversion: a text of 3 bytes naming a
// record of 9,000 fields costs about 1.2 MB kept and 7.5 MB made to compile.
func NamedEnv(text string, env TypeEnv) TypeEnv { return rewrite(text, env).checkerEnv(env) }

// checkerEnv returns the part of env the expression can read: the variables
// it names, or all of env when it reads $env. A nil env stays nil (scope not
// known).
func (s *source) checkerEnv(env TypeEnv) TypeEnv {
	if env == nil || s.readsEnv {
		return env
	}
	sub := make(TypeEnv, len(s.idents))
	for name := range s.idents {
		if t, ok := env[name]; ok {
			sub[name] = t
		}
	}
	return sub
}

// rewrite finds the #name references in text with expr's own lexer, so that
// '#' inside string literals and comments is left alone, and removes their
// '#'. A '#' that is expr's predicate pointer (# alone, #.field, #index,
// #acc) is kept. When the text does not lex to the end, the references
// before the lexing error are still rewritten, so that the error, found again
// by the parser, maps back to the same place.
func rewrite(text string, env TypeEnv) *source {
	l := lexer.New()
	l.Reset(file.NewSource(text))
	var tokens []lexer.Token
	for {
		t, err := l.Next()
		if err != nil || t.Kind == lexer.EOF {
			break
		}
		tokens = append(tokens, t)
	}
	remove := map[int]bool{} // rune offsets of '#' to remove
	hashedWord, word := -1, ""
	for i := 0; i+1 < len(tokens); i++ {
		hash, name := tokens[i], tokens[i+1]
		if hash.Kind != lexer.Operator || hash.Value != "#" || name.From != hash.To {
			continue
		}
		if (name.Kind == lexer.Identifier || name.Kind == lexer.Operator) && keywords[name.Value] {
			if hashedWord < 0 {
				hashedWord, word = hash.From, name.Value
			}
			continue
		}
		if name.Kind != lexer.Identifier {
			continue
		}
		if _, inScope := env[name.Value]; !inScope && pointerNames[name.Value] {
			continue
		}
		remove[hash.From] = true
	}
	s := &source{original: text, hashed: map[int]bool{}, env: env, idents: map[string]bool{}, hashedWord: hashedWord, word: word}
	for _, t := range tokens {
		if t.Kind == lexer.Identifier {
			s.idents[t.Value] = true
			s.readsEnv = s.readsEnv || t.Value == "$env"
		}
	}
	if len(remove) == 0 {
		s.rewritten = text
		n := 0
		for range text {
			s.toOriginal = append(s.toOriginal, n)
			n++
		}
		s.toOriginal = append(s.toOriginal, n)
		return s
	}
	var b strings.Builder
	b.Grow(len(text))
	k := 0 // rune offset in original
	for _, r := range text {
		if remove[k] {
			s.hashed[len(s.toOriginal)] = true
		} else {
			s.toOriginal = append(s.toOriginal, k)
			b.WriteRune(r)
		}
		k++
	}
	s.toOriginal = append(s.toOriginal, k)
	s.rewritten = b.String()
	return s
}

// originalOffset maps a rune offset in the rewritten text to the rune
// offset in the original, pointing at the '#' of a rewritten reference.
func (s *source) originalOffset(j int) int {
	j = max(0, min(j, len(s.toOriginal)-1))
	o := s.toOriginal[j]
	if s.hashed[j] {
		o--
	}
	return o
}

// lineColumn returns the 1-based line and column (in code points) of a rune
// offset in text. An offset at the end gives the position after the last
// character.
func lineColumn(text string, offset int) (line, column int) {
	line, column = 1, 1
	k := 0
	for _, r := range text {
		if k >= offset {
			break
		}
		if r == '\n' {
			line++
			column = 1
		} else {
			column++
		}
		k++
	}
	return line, column
}
