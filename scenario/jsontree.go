package scenario

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The scenario decoder works on a small JSON tree that remembers where each
// value starts, so that every problem (an unknown field, a wrong type) can be
// reported with the line and column of the user's text, and so that object
// keys keep their order and duplicates are caught. encoding/json gives
// neither.

type jsonKind uint8

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

func (k jsonKind) String() string {
	switch k {
	case jsonNull:
		return "null"
	case jsonBool:
		return "a boolean"
	case jsonNumber:
		return "a number"
	case jsonString:
		return "a string"
	case jsonArray:
		return "an array"
	case jsonObject:
		return "an object"
	}
	return "a value"
}

// jsonValue is one parsed JSON value. start and end are byte offsets into the
// source; text is the unescaped string or the number as written.
type jsonValue struct {
	kind    jsonKind
	start   int
	end     int
	text    string
	boolean bool
	items   []*jsonValue
	members []jsonMember
}

type jsonMember struct {
	key    string
	offset int // byte offset of the key's opening quote
	value  *jsonValue
}

// maxJSONDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxJSONDepth = 512

// MaxJSONValues bounds the JSON values (objects, arrays, strings, numbers, literals, each
// member's value) of a scenario's text: its tree takes about 100 bytes a value, and 10 MiB of
// "{}," would be 3.5 million of them (several hundred MB for one request, and a decoder's
// report for each). A scenario of MaxNodes nodes and MaxEdges edges has about 30,000 (the
// examples have 43 a node at most, an edge 5).
const MaxJSONValues = 200_000

// jsonSyntaxError is a syntax error at a byte offset.
type jsonSyntaxError struct {
	offset int
	msg    string
}

func (e *jsonSyntaxError) Error() string { return e.msg }

type jsonParser struct {
	src    []byte
	pos    int
	depth  int
	values int
}

// parseJSON parses exactly one JSON value (RFC 8259) surrounded by optional
// whitespace.
func parseJSON(src []byte) (*jsonValue, error) {
	p := &jsonParser{src: src}
	p.skipSpace()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(p.src) {
		return nil, p.errorf("unexpected %s after the end of the JSON value", p.describe())
	}
	return v, nil
}

func (p *jsonParser) errorf(format string, args ...any) error {
	return &jsonSyntaxError{offset: p.pos, msg: fmt.Sprintf(format, args...)}
}

// describe names the byte at the current position for error messages.
func (p *jsonParser) describe() string {
	if p.pos >= len(p.src) {
		return "end of input"
	}
	r, _ := utf8.DecodeRune(p.src[p.pos:])
	if r == utf8.RuneError {
		return fmt.Sprintf("byte 0x%02x", p.src[p.pos])
	}
	return fmt.Sprintf("character %q", r)
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value() (*jsonValue, error) {
	if p.pos >= len(p.src) {
		return nil, p.errorf("unexpected end of input, expected a JSON value")
	}
	if p.values++; p.values > MaxJSONValues {
		return nil, p.errorf("more than %d JSON values: a scenario has at most %d nodes and %d edges", MaxJSONValues, MaxNodes, MaxEdges)
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		start := p.pos
		s, err := p.string()
		if err != nil {
			return nil, err
		}
		return &jsonValue{kind: jsonString, start: start, end: p.pos, text: s}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return p.literal("true", jsonBool, true)
	case c == 'f':
		return p.literal("false", jsonBool, false)
	case c == 'n':
		return p.literal("null", jsonNull, false)
	}
	return nil, p.errorf("unexpected %s, expected a JSON value", p.describe())
}

func (p *jsonParser) literal(word string, kind jsonKind, b bool) (*jsonValue, error) {
	start := p.pos
	if !strings.HasPrefix(string(p.src[p.pos:min(len(p.src), p.pos+len(word))]), word) {
		return nil, p.errorf("unexpected %s, expected a JSON value", p.describe())
	}
	p.pos += len(word)
	return &jsonValue{kind: kind, start: start, end: p.pos, boolean: b}, nil
}

func (p *jsonParser) enter() error {
	p.depth++
	if p.depth > maxJSONDepth {
		return p.errorf("JSON nested deeper than %d levels", maxJSONDepth)
	}
	return nil
}

func (p *jsonParser) object() (*jsonValue, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	v := &jsonValue{kind: jsonObject, start: p.pos}
	p.pos++ // '{'
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		v.end = p.pos
		return v, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return nil, p.errorf("unexpected %s, expected a field name in double quotes", p.describe())
		}
		keyOffset := p.pos
		key, err := p.string()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return nil, p.errorf("unexpected %s, expected ':' after a field name", p.describe())
		}
		p.pos++
		p.skipSpace()
		item, err := p.value()
		if err != nil {
			return nil, err
		}
		v.members = append(v.members, jsonMember{key: key, offset: keyOffset, value: item})
		p.skipSpace()
		if p.pos >= len(p.src) {
			return nil, p.errorf("unexpected end of input, expected ',' or '}'")
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			v.end = p.pos
			return v, nil
		default:
			return nil, p.errorf("unexpected %s, expected ',' or '}'", p.describe())
		}
	}
}

func (p *jsonParser) array() (*jsonValue, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	v := &jsonValue{kind: jsonArray, start: p.pos}
	p.pos++ // '['
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		v.end = p.pos
		return v, nil
	}
	for {
		p.skipSpace()
		item, err := p.value()
		if err != nil {
			return nil, err
		}
		v.items = append(v.items, item)
		p.skipSpace()
		if p.pos >= len(p.src) {
			return nil, p.errorf("unexpected end of input, expected ',' or ']'")
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			v.end = p.pos
			return v, nil
		default:
			return nil, p.errorf("unexpected %s, expected ',' or ']'", p.describe())
		}
	}
}

// string reads a JSON string starting at the opening quote and returns its
// unescaped value.
func (p *jsonParser) string() (string, error) {
	start := p.pos
	p.pos++ // opening quote
	escaped := false
	for {
		if p.pos >= len(p.src) {
			p.pos = start
			return "", p.errorf("string not terminated")
		}
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			raw := p.src[start:p.pos]
			if !escaped && utf8.Valid(raw) {
				return string(raw[1 : len(raw)-1]), nil
			}
			// encoding/json unescapes exactly as JSON says (surrogate pairs,
			// invalid UTF-8 replaced by U+FFFD).
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				p.pos = start
				return "", p.errorf("invalid string: %v", err)
			}
			return s, nil
		case c == '\\':
			escaped = true
			if p.pos+1 >= len(p.src) {
				p.pos++
				return "", p.errorf("string not terminated")
			}
			switch p.src[p.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.pos += 2
			case 'u':
				for i := 2; i < 6; i++ {
					if p.pos+i >= len(p.src) || !isHex(p.src[p.pos+i]) {
						p.pos += min(i, len(p.src)-p.pos)
						return "", p.errorf("invalid \\u escape in string")
					}
				}
				p.pos += 6
			default:
				p.pos++
				return "", p.errorf("invalid escape %s in string", p.describe())
			}
		case c < 0x20:
			return "", p.errorf("control character %q must be escaped in a string", rune(c))
		default:
			p.pos++
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (p *jsonParser) number() (*jsonValue, error) {
	start := p.pos
	if p.src[p.pos] == '-' {
		p.pos++
	}
	switch {
	case p.pos < len(p.src) && p.src[p.pos] == '0':
		p.pos++
	case p.pos < len(p.src) && isDigit(p.src[p.pos]):
		for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
			p.pos++
		}
	default:
		return nil, p.errorf("invalid number: expected a digit, got %s", p.describe())
	}
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		p.pos++
		if p.pos >= len(p.src) || !isDigit(p.src[p.pos]) {
			return nil, p.errorf("invalid number: expected a digit after '.', got %s", p.describe())
		}
		for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
			p.pos++
		}
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.src) && (p.src[p.pos] == '+' || p.src[p.pos] == '-') {
			p.pos++
		}
		if p.pos >= len(p.src) || !isDigit(p.src[p.pos]) {
			return nil, p.errorf("invalid number: expected a digit in the exponent, got %s", p.describe())
		}
		for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
			p.pos++
		}
	}
	return &jsonValue{kind: jsonNumber, start: start, end: p.pos, text: string(p.src[start:p.pos])}, nil
}

// Position converts a byte offset in text into a 1-based line and a 1-based
// column counted in Unicode code points. An offset past the end gives the
// position just after the last character.
func Position(text []byte, offset int) (line, column int) {
	offset = max(0, min(offset, len(text)))
	m := mark{0, 1, 1}
	for m.offset < offset {
		m.step(text)
	}
	return m.line, m.column
}

// mark is a place in a text: a byte offset and its line and column (as Position gives them).
type mark struct{ offset, line, column int }

// step moves m past the character of text at m.offset.
func (m *mark) step(text []byte) {
	r, size := utf8.DecodeRune(text[m.offset:])
	if r == '\n' {
		m.line++
		m.column = 1
	} else {
		m.column++
	}
	m.offset += size
}
