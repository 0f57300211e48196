package expression

import (
	"fmt"
	"unicode/utf8"

	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser/lexer"

	"github.com/scenario-server/scenario-server/scenario"
)

// Compilation limits.
//
// expr's parser, our #-reference rewriter, the type checker and the
// compiler all recurse over the text or its tree, and a text of a million
// '(' (or '-', '!', '[', nested calls) overflows the goroutine stack, which
// no recover can catch. So before any of them runs, Compile checks the
// text's length and, with a linear scan of expr's tokens (string literals and
// comments are single tokens, so their brackets do not count), its nesting
// depth. The parser's own node count (expr's MaxNodes) bounds everything
// else that recurses: every other level of recursion in the parser makes a
// node before it goes deeper.

// Codes of the problems of texts past a limit.
const (
	// CodeTooLong: the text is longer than Limits.MaxLength bytes; located
	// at the first character past the limit.
	CodeTooLong = "expression-too-long"
	// CodeTooDeep: brackets and unary operators nest deeper than
	// Limits.MaxDepth; located at the bracket or operator that goes one
	// level too deep.
	CodeTooDeep = "expression-too-deep"
	// CodeTooLarge: the parser made more than Limits.MaxNodes syntax nodes;
	// located where the parser stopped.
	CodeTooLarge = "expression-too-large"
)

// Defaults of Limits.
const (
	DefaultMaxLength = 64 << 10 // bytes of UTF-8 text: 65,536
	DefaultMaxDepth  = 128      // levels of nesting
	DefaultMaxNodes  = 10_000   // syntax nodes (expr's own default)
)

// Limits bound the text Compile accepts; a zero or negative field means its
// default. They are checked before expr's parser runs (MaxNodes while it
// runs), so that no text, however long or deep, reaches a recursive part of
// the compiler unbounded.
type Limits struct {
	// MaxLength is the longest text, in bytes of its UTF-8 encoding.
	// Default DefaultMaxLength (64 KiB).
	MaxLength int
	// MaxDepth is the deepest nesting of brackets ( [ { (calls, indexes,
	// lists, records, predicates) and unary operators (- + ! not): "-(-x)"
	// is 3 levels deep, "f(g(x))" 2, "not !a" 2. Default DefaultMaxDepth
	// (128).
	MaxDepth int
	// MaxNodes is the most syntax nodes (names, literals, operators, calls)
	// expr's parser may make: the size of the expression. Default
	// DefaultMaxNodes (10,000).
	MaxNodes int
}

func (l Limits) withDefaults() Limits {
	if l.MaxLength <= 0 {
		l.MaxLength = DefaultMaxLength
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxNodes <= 0 {
		l.MaxNodes = DefaultMaxNodes
	}
	return l
}

// checkLimits checks the length and the nesting depth of text, in time
// linear in its length and without recursion. A text that does not lex to
// the end is checked up to its lexing error, which the parser reports.
func checkLimits(text string, lim Limits) *scenario.Problem {
	if len(text) > lim.MaxLength {
		// Locate the first character that starts past the limit.
		cut := lim.MaxLength
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		line, col := lineColumn(text, utf8.RuneCountInString(text[:cut]))
		return &scenario.Problem{
			Code:    CodeTooLong,
			Message: fmt.Sprintf("the expression is %d bytes long; at most %d bytes are allowed", len(text), lim.MaxLength),
			Line:    line, Column: col,
		}
	}
	l := lexer.New()
	l.Reset(file.NewSource(text))
	// levels[i] is the number of unary operators pending at bracket level
	// i (level 0 is outside every bracket): they apply to the operand that
	// follows and end at the next binary operator or separator of their
	// level. depth is the number of open brackets plus all pending unary
	// operators: how deep the parser recurses there.
	levels := []int{0}
	depth := 0
	operandEnded := false // the previous token ended an operand
	for {
		t, err := l.Next()
		if err != nil || t.Kind == lexer.EOF {
			return nil
		}
		deeper := false
		switch {
		case t.Kind == lexer.Bracket && (t.Value == "(" || t.Value == "[" || t.Value == "{"):
			levels = append(levels, 0)
			depth++
			deeper = true
			operandEnded = false
		case t.Kind == lexer.Bracket:
			if len(levels) > 1 {
				depth -= 1 + levels[len(levels)-1]
				levels = levels[:len(levels)-1]
			}
			operandEnded = true
		case t.Kind == lexer.Operator && t.Value == "#":
			operandEnded = true // the predicate's element, an operand
		case t.Kind == lexer.Operator && !operandEnded && isUnary(t.Value):
			levels[len(levels)-1]++
			depth++
			deeper = true
		case t.Kind == lexer.Operator:
			depth -= levels[len(levels)-1]
			levels[len(levels)-1] = 0
			operandEnded = false
		default: // identifiers, numbers, strings
			operandEnded = true
		}
		if deeper && depth > lim.MaxDepth {
			line, col := lineColumn(text, t.From)
			return &scenario.Problem{
				Code:    CodeTooDeep,
				Message: fmt.Sprintf("the expression nests deeper than %d levels (brackets and unary operators)", lim.MaxDepth),
				Line:    line, Column: col,
			}
		}
	}
}

func isUnary(op string) bool {
	return op == "-" || op == "+" || op == "!" || op == "not"
}

// tooLarge is the problem of a text whose tree passed lim.MaxNodes, from
// the parser's error.
func (s *source) tooLarge(err error, lim Limits) scenario.Problem {
	p := s.problem(err, CodeTooLarge, nil)
	p.Message = fmt.Sprintf("the expression has more than %d parts (names, literals, operators, calls); split it into variables of their own", lim.MaxNodes)
	return p
}
