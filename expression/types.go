package expression

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr/checker/nature"
	"github.com/expr-lang/expr/types"
)

// Kind is the kind of a Type.
type Kind uint8

// The kinds of the type lattice. KindUnknown (dynamic) is compatible with
// everything and is checked when the expression runs. KindNumber is an
// integer or a float, not known which.
const (
	KindUnknown Kind = iota
	KindNull
	KindBoolean
	KindInteger
	KindFloat
	KindNumber
	KindString
	KindDuration
	KindList
	KindRecord
)

var kindNames = [...]string{"unknown", "null", "boolean", "integer", "float", "number", "string", "duration", "list", "record"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Type is the static type of a variable or of an expression's result.
//
// Nullable means the value may also be null (or, for a record field, be
// missing). Elem is the element type of a list. Fields are a record's known
// fields, sorted by name; an Open record may have other fields too, of
// unknown type, while accessing an undeclared field of a closed record is a
// compile error.
//
// Durations exist only inside expressions (expr's duration()); a duration
// leaving an expression becomes integer milliseconds (see Boundary).
type Type struct {
	Kind     Kind
	Nullable bool
	Elem     *Type
	Fields   []Field
	Open     bool
}

// Field is a named field of a record type.
type Field struct {
	Name string
	Type Type
}

// The simple types.
var (
	Unknown  = Type{Kind: KindUnknown}
	Null     = Type{Kind: KindNull}
	Boolean  = Type{Kind: KindBoolean}
	Integer  = Type{Kind: KindInteger}
	Float    = Type{Kind: KindFloat}
	Number   = Type{Kind: KindNumber}
	String   = Type{Kind: KindString}
	Duration = Type{Kind: KindDuration}
)

// ListOf returns the type of lists of elem.
func ListOf(elem Type) Type { return Type{Kind: KindList, Elem: &elem} }

// RecordOf returns a closed record type with the given fields (sorted by
// name; later duplicates win).
func RecordOf(fields ...Field) Type {
	return Type{Kind: KindRecord, Fields: sortFields(fields)}
}

// OpenRecordOf returns a record type with the given fields that may also
// have others.
func OpenRecordOf(fields ...Field) Type {
	return Type{Kind: KindRecord, Fields: sortFields(fields), Open: true}
}

func sortFields(fields []Field) []Field {
	if len(fields) == 0 {
		return nil
	}
	byName := make(map[string]Type, len(fields))
	for _, f := range fields {
		byName[f.Name] = f.Type
	}
	out := make([]Field, 0, len(byName))
	for name, t := range byName {
		out = append(out, Field{Name: name, Type: t})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// OrNull returns t that may also be null.
func (t Type) OrNull() Type {
	if t.Kind == KindUnknown || t.Kind == KindNull {
		return t
	}
	t.Nullable = true
	return t
}

// Field returns the type of the record field name and whether the record
// declares it.
func (t Type) Field(name string) (Type, bool) {
	for _, f := range t.Fields {
		if f.Name == name {
			return f.Type, true
		}
	}
	return Type{}, false
}

// String writes the type as people read it: "integer", "string?" (nullable),
// "list(integer)", "record{a: integer, b: string}", "record{a: integer, ...}"
// (open).
func (t Type) String() string {
	b := displayWriter{max: math.MaxInt}
	t.write(&b)
	return b.String()
}

// MaxDisplayBytes is the most bytes of a type's text that Display gives, its "…" not
// counted: a record nested 63 deep whose field names are 10 KB long reads as 630 KB at its
// top, and a scope report that gives each nested type's text (its fields' too) would give
// 20 MB for it.
const MaxDisplayBytes = 1 << 10

// Display is String cut after MaxDisplayBytes bytes (at a character boundary), with "…"
// when cut: the text of a type for people, in O(MaxDisplayBytes) work.
func (t Type) Display() string {
	b := displayWriter{max: MaxDisplayBytes}
	t.write(&b)
	if !b.cut {
		return b.String()
	}
	s := b.String()
	// Drop a character cut in the middle: its first byte is among the last utf8.UTFMax.
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				s = s[:i]
			}
			break
		}
	}
	return s + "…"
}

// displayWriter is a strings.Builder that keeps at most max bytes; past them, cut is set
// and writes are dropped.
type displayWriter struct {
	strings.Builder
	max int
	cut bool
}

func (b *displayWriter) WriteString(s string) {
	if b.cut {
		return
	}
	if room := b.max - b.Len(); len(s) > room {
		b.Builder.WriteString(s[:room])
		b.cut = true
		return
	}
	b.Builder.WriteString(s)
}

func (t Type) write(b *displayWriter) {
	if b.cut {
		return
	}
	switch t.Kind {
	case KindList:
		b.WriteString("list(")
		if t.Elem != nil {
			t.Elem.write(b)
		} else {
			b.WriteString("unknown")
		}
		b.WriteString(")")
	case KindRecord:
		b.WriteString("record{")
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.Name)
			b.WriteString(": ")
			f.Type.write(b)
		}
		if t.Open {
			if len(t.Fields) > 0 {
				b.WriteString(", ")
			}
			b.WriteString("...")
		}
		b.WriteString("}")
	default:
		b.WriteString(t.Kind.String())
	}
	if t.Nullable {
		b.WriteString("?")
	}
}

// typeJSON is the JSON form of a Type, for the API:
// {"kind": "record", "nullable": true, "fields": {"a": {"kind": "integer"}}, "open": true}.
type typeJSON struct {
	Kind     string              `json:"kind"`
	Nullable bool                `json:"nullable,omitempty"`
	Elem     *Type               `json:"elem,omitempty"`
	Fields   map[string]typeJSON `json:"fields,omitempty"`
	Open     bool                `json:"open,omitempty"`
	Display  string              `json:"display"`
}

// MarshalJSON writes the type as {"kind", "nullable", "elem", "fields",
// "open", "display"}, display being String().
func (t Type) MarshalJSON() ([]byte, error) {
	return json.Marshal(t.toJSON())
}

func (t Type) toJSON() typeJSON {
	j := typeJSON{Kind: t.Kind.String(), Nullable: t.Nullable, Elem: t.Elem, Open: t.Open, Display: t.String()}
	if len(t.Fields) > 0 {
		j.Fields = make(map[string]typeJSON, len(t.Fields))
		for _, f := range t.Fields {
			j.Fields[f.Name] = f.Type.toJSON()
		}
	}
	return j
}

// Equal reports whether t and u are the same type.
func (t Type) Equal(u Type) bool {
	if t.Kind != u.Kind || t.Nullable != u.Nullable || t.Open != u.Open || len(t.Fields) != len(u.Fields) {
		return false
	}
	if t.Kind == KindList && !t.elem().Equal(u.elem()) {
		return false
	}
	for i := range t.Fields {
		if t.Fields[i].Name != u.Fields[i].Name || !t.Fields[i].Type.Equal(u.Fields[i].Type) {
			return false
		}
	}
	return true
}

func (t Type) elem() Type {
	if t.Elem == nil {
		return Unknown
	}
	return *t.Elem
}

func (t Type) isNumeric() bool {
	return t.Kind == KindInteger || t.Kind == KindFloat || t.Kind == KindNumber
}

// Join returns the least type that holds values of both t and u: t when
// they are equal, number for two numeric types, a nullable t for t and
// null, unknown otherwise.
func Join(t, u Type) Type {
	nullable := t.Nullable || u.Nullable
	switch {
	case t.Kind == KindNull:
		return u.OrNull()
	case u.Kind == KindNull:
		return t.OrNull()
	case t.Kind == KindUnknown || u.Kind == KindUnknown:
		return Unknown
	}
	t.Nullable, u.Nullable = false, false
	var j Type
	switch {
	case t.Equal(u):
		j = t
	case t.isNumeric() && u.isNumeric():
		j = Number
	case t.Kind == KindList && u.Kind == KindList:
		j = ListOf(Join(t.elem(), u.elem()))
	default:
		return Unknown
	}
	if nullable {
		j = j.OrNull()
	}
	return j
}

// AssignableTo reports whether a value of type t may be used where want is
// required. Unknown is assignable to everything (it is checked when the
// expression runs), everything is assignable to Unknown, integers and floats
// to Number, and lists and records by their element and field types. A
// nullable t is assignable only to a nullable want (or Unknown), except that
// null is never assignable to a non-nullable want.
func (t Type) AssignableTo(want Type) bool {
	if want.Kind == KindUnknown || t.Kind == KindUnknown {
		return true
	}
	if t.Kind == KindNull {
		return want.Nullable
	}
	if t.Nullable && !want.Nullable {
		return false
	}
	switch want.Kind {
	case KindNumber:
		return t.isNumeric()
	case KindList:
		return t.Kind == KindList && t.elem().AssignableTo(want.elem())
	case KindRecord:
		if t.Kind != KindRecord {
			return false
		}
		for _, f := range want.Fields {
			ft, ok := t.Field(f.Name)
			if !ok {
				if !f.Type.Nullable && !t.Open {
					return false
				}
				continue
			}
			if !ft.AssignableTo(f.Type) {
				return false
			}
		}
		return true
	}
	return t.Kind == want.Kind
}

// Boundary returns the type a value of type t has once it leaves an
// expression as a JSON value: durations and times become integer
// milliseconds; everything else is unchanged.
func Boundary(t Type) Type {
	switch t.Kind {
	case KindDuration:
		t.Kind = KindInteger
	case KindList:
		e := Boundary(t.elem())
		t.Elem = &e
	case KindRecord:
		fields := make([]Field, len(t.Fields))
		for i, f := range t.Fields {
			fields[i] = Field{Name: f.Name, Type: Boundary(f.Type)}
		}
		t.Fields = fields
	}
	return t
}

// exprType converts t to the type expr's checker uses. Values that may be
// null (nullable types and numbers that may be integers or floats) become
// expr's "any", because expr compiles typed operations (such as == on two
// ints) that would fail on a value of another Go type; those are checked
// when the expression runs instead.
func exprType(t Type) types.Type {
	if t.Nullable {
		return types.Any
	}
	switch t.Kind {
	case KindBoolean:
		return types.Bool
	case KindInteger:
		return types.Int
	case KindFloat:
		return types.Float64
	case KindString:
		return types.String
	case KindNull:
		return types.Nil
	case KindDuration:
		return types.TypeOf(time.Duration(0))
	case KindList:
		return types.Array(exprType(t.elem()))
	case KindRecord:
		m := types.Map{}
		for _, f := range t.Fields {
			m[f.Name] = exprType(f.Type)
		}
		if t.Open {
			m[types.Extra] = types.Any
		}
		return m
	}
	return types.Any
}

var (
	timeType     = reflect.TypeOf(time.Time{})
	durationType = reflect.TypeOf(time.Duration(0))
)

// fromNature converts the type expr's checker inferred back to a Type.
// Times are epoch milliseconds outside expressions, so they become integers.
func fromNature(n *nature.Nature, depth int) Type {
	if n == nil || depth > 32 {
		return Unknown
	}
	if n.Nil {
		return Null
	}
	if n.Type == nil {
		return Unknown
	}
	switch n.Type {
	case timeType:
		return Integer
	case durationType:
		return Duration
	}
	switch {
	case n.IsInteger:
		return Integer
	case n.IsFloat:
		return Float
	}
	switch n.Type.Kind() {
	case reflect.Bool:
		return Boolean
	case reflect.String:
		return String
	case reflect.Slice, reflect.Array:
		if n.Type.Elem().Kind() == reflect.Uint8 {
			return Unknown // expr's bytes
		}
		if n.Ref != nil {
			return ListOf(fromNature(n.Ref, depth+1))
		}
		var c nature.Cache
		e := c.FromType(n.Type.Elem())
		return ListOf(fromNature(&e, depth+1))
	case reflect.Map:
		if n.Type.Key().Kind() != reflect.String {
			return Unknown
		}
		var fields []Field
		if n.TypeData != nil {
			for name, f := range n.Fields {
				f := f
				fields = append(fields, Field{Name: name, Type: fromNature(&f, depth+1)})
			}
		}
		open := !n.Strict || n.TypeData == nil || n.DefaultMapValue != nil
		return Type{Kind: KindRecord, Fields: sortFields(fields), Open: open}
	}
	return Unknown
}

// ErrSchema is wrapped by the errors of TypeFromJSONSchema.
var ErrSchema = errors.New("unsupported JSON Schema")

// TypeFromJSONSchema returns the type of the values a JSON Schema describes.
// It reads "type" (a name or a list of names, "null" among them making the
// type nullable), "properties" and "required" of objects (a property not
// required is nullable: it may be missing), "additionalProperties" (true or
// a schema makes the record open; absent or false leaves it closed, so that
// a misspelt field is a compile error), and "items" of arrays. A schema
// without "type", or with several non-null types, is unknown. Other keywords
// are ignored. It returns an error wrapping ErrSchema when the schema is not
// a JSON object or a keyword has the wrong shape.
func TypeFromJSONSchema(schema []byte) (Type, error) {
	var raw any
	if err := json.Unmarshal(schema, &raw); err != nil {
		return Unknown, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	return typeFromSchema(raw, "", 0)
}

func typeFromSchema(raw any, path string, depth int) (Type, error) {
	if depth > 64 {
		return Unknown, fmt.Errorf("%w: nested deeper than 64 levels at %s", ErrSchema, schemaPath(path))
	}
	if _, ok := raw.(bool); ok {
		// true accepts anything; false accepts nothing, which no event can
		// satisfy, so it is unknown too.
		return Unknown, nil
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return Unknown, fmt.Errorf("%w: schema at %s must be an object", ErrSchema, schemaPath(path))
	}
	var names []string
	switch tv := obj["type"].(type) {
	case nil:
		return Unknown, nil
	case string:
		names = []string{tv}
	case []any:
		for _, x := range tv {
			s, ok := x.(string)
			if !ok {
				return Unknown, fmt.Errorf("%w: \"type\" at %s must list strings", ErrSchema, schemaPath(path))
			}
			names = append(names, s)
		}
	default:
		return Unknown, fmt.Errorf("%w: \"type\" at %s must be a string or a list of strings", ErrSchema, schemaPath(path))
	}
	nullable := false
	var kinds []string
	for _, n := range names {
		if n == "null" {
			nullable = true
			continue
		}
		kinds = append(kinds, n)
	}
	if len(kinds) == 0 {
		return Null, nil
	}
	if len(kinds) > 1 {
		return Unknown, nil
	}
	var t Type
	switch kinds[0] {
	case "boolean":
		t = Boolean
	case "integer":
		t = Integer
	case "number":
		t = Number
	case "string":
		t = String
	case "array":
		elem := Unknown
		if items, ok := obj["items"]; ok {
			var err error
			if elem, err = typeFromSchema(items, path+"/items", depth+1); err != nil {
				return Unknown, err
			}
		}
		t = ListOf(elem)
	case "object":
		var err error
		if t, err = recordFromSchema(obj, path, depth); err != nil {
			return Unknown, err
		}
	default:
		return Unknown, fmt.Errorf("%w: unknown type %q at %s", ErrSchema, kinds[0], schemaPath(path))
	}
	if nullable {
		t = t.OrNull()
	}
	return t, nil
}

func recordFromSchema(obj map[string]any, path string, depth int) (Type, error) {
	required := map[string]bool{}
	if r, ok := obj["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return Unknown, fmt.Errorf("%w: \"required\" at %s must be a list of names", ErrSchema, schemaPath(path))
		}
		for _, x := range list {
			s, ok := x.(string)
			if !ok {
				return Unknown, fmt.Errorf("%w: \"required\" at %s must be a list of names", ErrSchema, schemaPath(path))
			}
			required[s] = true
		}
	}
	var fields []Field
	if p, ok := obj["properties"]; ok {
		props, ok := p.(map[string]any)
		if !ok {
			return Unknown, fmt.Errorf("%w: \"properties\" at %s must be an object", ErrSchema, schemaPath(path))
		}
		names := make([]string, 0, len(props))
		for name := range props {
			names = append(names, name)
		}
		sort.Strings(names) // the first error found must not depend on map order
		for _, name := range names {
			ft, err := typeFromSchema(props[name], path+"/properties/"+name, depth+1)
			if err != nil {
				return Unknown, err
			}
			if !required[name] {
				ft = ft.OrNull()
			}
			fields = append(fields, Field{Name: name, Type: ft})
		}
	}
	open := false
	switch ap := obj["additionalProperties"].(type) {
	case nil:
	case bool:
		open = ap
	case map[string]any:
		open = true
	default:
		return Unknown, fmt.Errorf("%w: \"additionalProperties\" at %s must be a boolean or a schema", ErrSchema, schemaPath(path))
	}
	return Type{Kind: KindRecord, Fields: sortFields(fields), Open: open}, nil
}

func schemaPath(path string) string {
	if path == "" {
		return "the root"
	}
	return path
}
