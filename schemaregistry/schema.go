package schemaregistry

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/scenario-server/scenario-server/internal/jsonschemas"
)

// schema is a registry schema, parsed: Avro (avro set) or JSON Schema (json set).
type schema struct {
	avro avro.Schema
	// jsonSchema is the JSON Schema's text (for a JSON Schema) or the Avro schema's
	// translation (inputTypeSchema); json checks values against a JSON Schema.
	jsonSchema []byte
	json       *jsonschemas.Schema
	// size estimates the bytes the schema holds in memory (parsedBytesPerByte per byte of
	// its text, and its translation), for the caches' bound (maxCachedBytes).
	size int
}

// parsedBytesPerByte is about how many bytes a parsed schema holds per byte of its text:
// an Avro record of 30,000 long fields, 709 KB of text, held 9.4 MB parsed (13 per byte).
const parsedBytesPerByte = 16

// parseSchema parses a registry schema; schemas with references, and Protobuf, are not
// supported.
func parseSchema(s sr.Schema) (*schema, error) {
	if len(s.References) > 0 {
		return nil, errors.New("schemas with references are not supported")
	}
	switch s.Type {
	case sr.TypeAvro:
		// A cache of its own: two subjects may name different records alike.
		a, err := avro.ParseWithCache(s.Schema, "", &avro.SchemaCache{})
		if err == nil {
			err = checkAvroDecimals(a)
		}
		if err != nil {
			return nil, fmt.Errorf("Avro schema: %w", err)
		}
		js, err := json.Marshal(avroJSONSchema(a))
		if err != nil {
			return nil, err
		}
		return &schema{avro: a, jsonSchema: js, size: parsedBytesPerByte*len(s.Schema) + len(js)}, nil
	case sr.TypeJSON:
		compiled, err := jsonschemas.Compile([]byte(s.Schema), "registry.json")
		if err != nil {
			return nil, fmt.Errorf("JSON Schema: %w", err)
		}
		return &schema{jsonSchema: []byte(s.Schema), json: compiled, size: parsedBytesPerByte * len(s.Schema)}, nil
	default:
		return nil, fmt.Errorf("%s schemas are not supported (Avro and JSON Schema are)", s.Type)
	}
}

// maxJSONSchemaNodes bounds the schemas (objects) of one Avro schema's JSON Schema
// translation (avroJSONSchema), and maxJSONSchemaBytes its text, as jsonSchemaBytes
// estimates it. Named types are expanded where they are used, so without a bound a schema of
// 113 bytes whose record names itself twice translated to 369 MB (and took 6.9 GB), a chain
// of 19 records each naming the next twice to 2 GB, and a 6.5 MB schema naming an enum of
// 6 MB of symbols in 19,000 fields to about 114 GB.
const (
	maxJSONSchemaNodes = 20_000
	maxJSONSchemaBytes = 2 << 20
)

// The estimate of a translation's text, in bytes: each schema jsonSchemaBytes, and for each
// record field and enum symbol its name's bytes and jsonNameBytes (a record's field names
// are written twice, in "properties" and in "required").
const (
	jsonSchemaBytes = 16
	jsonNameBytes   = 3
)

// avroJSONSchema translates an Avro schema to the JSON Schema of the JSON values its data
// decode to (decodeAvro), for typing #input: records are closed objects whose fields are all
// required (a nullable union adds "null" to the field's type), maps open objects, int and
// long integers, float and double numbers, string, enum, bytes and fixed strings, and the
// time logical types (date, timestamp-*, time-*) epoch milliseconds. Other unions are
// unknown ({}), and so are a record named again inside itself (a recursive schema), what
// lies deeper than 64 levels, and what comes after the first maxJSONSchemaNodes schemas or
// maxJSONSchemaBytes of the translation (depth first, fields in order); an enum whose
// symbols do not fit in what is left is a string without its list of symbols.
func avroJSONSchema(s avro.Schema) map[string]any {
	t := avroTranslation{left: maxJSONSchemaNodes, bytes: maxJSONSchemaBytes, open: map[string]bool{}}
	return t.schema(s, 0)
}

// avroTranslation is one avroJSONSchema: the schemas and bytes it may still give, and the
// records being translated (from the root to where it is).
type avroTranslation struct {
	left, bytes int
	open        map[string]bool
}

// take charges n bytes of text to the translation, and says whether they fit in it.
func (t *avroTranslation) take(n int) bool {
	if n > t.bytes {
		return false
	}
	t.bytes -= n
	return true
}

func (t *avroTranslation) schema(s avro.Schema, depth int) map[string]any {
	if r, ok := s.(*avro.RefSchema); ok { // a name, not a schema of its own
		if depth > 64 {
			return map[string]any{}
		}
		return t.schema(r.Schema(), depth+1)
	}
	if depth > 64 || t.left <= 0 || !t.take(jsonSchemaBytes) {
		return map[string]any{}
	}
	t.left--
	switch s := s.(type) {
	case *avro.RecordSchema:
		name := s.FullName()
		if t.open[name] {
			return map[string]any{}
		}
		names := 0
		for _, f := range s.Fields() {
			names += 2 * (len(f.Name()) + jsonNameBytes)
		}
		if !t.take(names) {
			return map[string]any{}
		}
		t.open[name] = true
		defer delete(t.open, name)
		props := map[string]any{}
		required := []any{}
		for _, f := range s.Fields() {
			props[f.Name()] = t.schema(f.Type(), depth+1)
			required = append(required, f.Name())
		}
		return map[string]any{"type": "object", "properties": props, "required": required}
	case *avro.ArraySchema:
		return map[string]any{"type": "array", "items": t.schema(s.Items(), depth+1)}
	case *avro.MapSchema:
		return map[string]any{"type": "object", "additionalProperties": t.schema(s.Values(), depth+1)}
	case *avro.UnionSchema:
		if s.Nullable() {
			_, i := s.Indices()
			inner := t.schema(s.Types()[i], depth+1)
			if ty, ok := inner["type"].(string); ok {
				inner["type"] = []any{ty, "null"}
			}
			return inner
		}
		return map[string]any{}
	case *avro.EnumSchema:
		n := 0
		for _, x := range s.Symbols() {
			n += len(x) + jsonNameBytes
		}
		if !t.take(n) {
			return map[string]any{"type": "string"}
		}
		syms := make([]any, len(s.Symbols()))
		for i, x := range s.Symbols() {
			syms[i] = x
		}
		return map[string]any{"type": "string", "enum": syms}
	case *avro.FixedSchema:
		if s.Logical() != nil && s.Logical().Type() == avro.Decimal {
			return map[string]any{"type": "number"}
		}
		return map[string]any{"type": "string"}
	case *avro.NullSchema:
		return map[string]any{"type": "null"}
	case *avro.PrimitiveSchema:
		if l := s.Logical(); l != nil {
			switch l.Type() {
			case avro.Decimal:
				return map[string]any{"type": "number"}
			case avro.Date, avro.TimeMillis, avro.TimeMicros, avro.TimestampMillis, avro.TimestampMicros,
				avro.LocalTimestampMillis, avro.LocalTimestampMicros:
				return map[string]any{"type": "integer"}
			}
		}
		switch s.Type() {
		case avro.Boolean:
			return map[string]any{"type": "boolean"}
		case avro.Int, avro.Long:
			return map[string]any{"type": "integer"}
		case avro.Float, avro.Double:
			return map[string]any{"type": "number"}
		case avro.String, avro.Bytes:
			return map[string]any{"type": "string"}
		case avro.Null:
			return map[string]any{"type": "null"}
		}
	}
	return map[string]any{}
}

// unionName is how hamba/avro names a union's member in the map it decodes a union to.
func unionName(s avro.Schema) string {
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema().FullName()
	}
	if p, ok := s.(*avro.PrimitiveSchema); ok && p.Logical() != nil {
		return string(p.Type()) + "." + string(p.Logical().Type())
	}
	return string(s.Type())
}

// jsonValue turns what hamba/avro decoded for s into a JSON value (see avroJSONSchema).
func jsonValue(s avro.Schema, v any, depth int) (any, error) {
	if depth > 64 {
		return nil, errors.New("nested deeper than 64 levels")
	}
	switch s := s.(type) {
	case *avro.RefSchema:
		return jsonValue(s.Schema(), v, depth+1)
	case *avro.RecordSchema:
		m, _ := v.(map[string]any)
		out := make(map[string]any, len(m))
		for _, f := range s.Fields() {
			x, err := jsonValue(f.Type(), m[f.Name()], depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name(), err)
			}
			out[f.Name()] = x
		}
		return out, nil
	case *avro.ArraySchema:
		a, _ := v.([]any)
		out := make([]any, len(a))
		for i, x := range a {
			y, err := jsonValue(s.Items(), x, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	case *avro.MapSchema:
		m, _ := v.(map[string]any)
		out := make(map[string]any, len(m))
		for k, x := range m {
			y, err := jsonValue(s.Values(), x, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = y
		}
		return out, nil
	case *avro.UnionSchema:
		if v == nil {
			return nil, nil
		}
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			for name, x := range m {
				for _, t := range s.Types() {
					if unionName(t) == name {
						return jsonValue(t, x, depth+1)
					}
				}
			}
		}
		if s.Nullable() { // hamba/avro gives a nullable union's value as it is
			_, i := s.Indices()
			return jsonValue(s.Types()[i], v, depth+1)
		}
		if _, named := v.(map[string]any); !named {
			// Where a union is decoded into an interface (an array's items, a map's values)
			// and every member is a type hamba/avro's TypeResolver knows (primitives and
			// their logical types), it gives the value as it is, unnamed: a scalar.
			return jsonScalar(nil, v)
		}
		return nil, errors.New("a union value hamba/avro did not name")
	}
	return jsonScalar(s, v)
}

// jsonScalar is the JSON value of a scalar hamba/avro decoded (for s, or nil where the
// schema is not known: a union's unnamed value, never a fixed). Its error is a decimal past
// float64's range, which JSON numbers here are.
func jsonScalar(s avro.Schema, v any) (any, error) {
	switch x := v.(type) {
	case time.Time:
		return x.UnixMilli(), nil
	case time.Duration:
		return x.Milliseconds(), nil
	case *big.Rat:
		f, _ := x.Float64()
		if math.IsInf(f, 0) {
			return nil, fmt.Errorf("a decimal past the range of a float64 (about 1.8e308): %.20s…", x.FloatString(0))
		}
		return f, nil
	case []byte:
		return string(x), nil
	case float32:
		return float64(x), nil
	}
	if a, ok := v.([]any); ok && a == nil {
		return []any{}, nil
	}
	if _, fixed := s.(*avro.FixedSchema); fixed {
		if b, ok := fixedBytes(v); ok {
			return string(b), nil
		}
	}
	return v, nil
}

// fixedBytes is a decoded fixed ([n]byte) as bytes.
func fixedBytes(v any) ([]byte, bool) {
	b, err := json.Marshal(v) // [n]byte marshals as a list of numbers
	if err != nil {
		return nil, false
	}
	var out []byte
	var nums []int
	if json.Unmarshal(b, &nums) != nil {
		return nil, false
	}
	for _, n := range nums {
		out = append(out, byte(n))
	}
	return out, true
}

// avroValue turns a JSON value (numbers as json.Number) into what hamba/avro encodes for s,
// or says why it does not fit.
// maxAvroWork bounds the work of one avroValue: 16 a value tried (each branch of a union
// tried counts) and the bytes of each field default it copies. A union of record branches
// nested 22 levels was tried for more than 15 minutes, and defaults of 1 MB copied into
// 20,000 list elements made 20 GB, before the record's size was looked at. It lets what a
// record of up to 1 MiB decodes to be encoded again: a value a byte, and MaxAvroItems items
// of no bytes (FuzzDecodeAvro: 4 bytes decoded to 262,143 empty records, whose encoding
// passed the 4 Mi units this was before).
const maxAvroWork = 16 * (MaxAvroItems + 1<<20)

// avroWork is what one avroValue may still do (maxAvroWork).
type avroWork struct{ left int }

// charge spends n of w, and errs once it is spent.
func (w *avroWork) charge(n int) error {
	if w.left -= n; w.left < 0 {
		return fmt.Errorf("encoding the value takes more than %d units of work (16 a value tried, and the bytes of each default copied)", maxAvroWork)
	}
	return nil
}

// defaultSize estimates the bytes of a field's default value.
func defaultSize(x any) int {
	switch x := x.(type) {
	case string:
		return len(x)
	case []byte:
		return len(x)
	case []any:
		n := 16
		for _, e := range x {
			n += defaultSize(e)
		}
		return n
	case map[string]any:
		n := 16
		for k, e := range x {
			n += len(k) + defaultSize(e)
		}
		return n
	}
	return 16
}

func avroValue(s avro.Schema, v any, depth int) (any, error) {
	return avroValueW(s, v, depth, &avroWork{left: maxAvroWork})
}

func avroValueW(s avro.Schema, v any, depth int, w *avroWork) (any, error) {
	if depth > 64 {
		return nil, errors.New("nested deeper than 64 levels")
	}
	if err := w.charge(16); err != nil {
		return nil, err
	}
	switch s := s.(type) {
	case *avro.RefSchema:
		return avroValueW(s.Schema(), v, depth+1, w)
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("want a record (%s), not %s", s.FullName(), jsonKind(v))
		}
		out := make(map[string]any, len(s.Fields()))
		known := map[string]bool{}
		for _, f := range s.Fields() {
			known[f.Name()] = true
			x, present := m[f.Name()]
			if !present && f.HasDefault() {
				if err := w.charge(defaultSize(f.Default())); err != nil {
					return nil, err
				}
				out[f.Name()] = f.Default()
				continue
			}
			y, err := avroValueW(f.Type(), x, depth+1, w)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name(), err)
			}
			out[f.Name()] = y
		}
		var extra []string
		for k := range m {
			if !known[k] {
				extra = append(extra, k)
			}
		}
		if len(extra) > 0 {
			sort.Strings(extra)
			return nil, fmt.Errorf("field %s is not in record %s", extra[0], s.FullName())
		}
		return out, nil
	case *avro.ArraySchema:
		a, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("want an array, not %s", jsonKind(v))
		}
		out := make([]any, len(a))
		for i, x := range a {
			y, err := avroValueW(s.Items(), x, depth+1, w)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = y
		}
		return out, nil
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("want a map, not %s", jsonKind(v))
		}
		out := make(map[string]any, len(m))
		for k, x := range m {
			y, err := avroValueW(s.Values(), x, depth+1, w)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = y
		}
		return out, nil
	case *avro.UnionSchema:
		if v == nil {
			for _, t := range s.Types() {
				if t.Type() == avro.Null {
					return nil, nil
				}
			}
			return nil, errors.New("want a value, not null")
		}
		var first error
		for _, t := range s.Types() {
			if t.Type() == avro.Null {
				continue
			}
			y, err := avroValueW(t, v, depth+1, w)
			if err == nil {
				return map[string]any{unionName(t): y}, nil
			}
			if first == nil {
				first = err
			}
		}
		return nil, first
	case *avro.EnumSchema:
		str, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a symbol of enum %s, not %s", s.FullName(), jsonKind(v))
		}
		for _, sym := range s.Symbols() {
			if sym == str {
				return str, nil
			}
		}
		return nil, fmt.Errorf("%q is not a symbol of enum %s", str, s.FullName())
	case *avro.NullSchema:
		if v != nil {
			return nil, fmt.Errorf("want null, not %s", jsonKind(v))
		}
		return nil, nil
	case *avro.PrimitiveSchema:
		return primitive(s, v)
	}
	return nil, fmt.Errorf("Avro %s values are not supported", s.Type())
}

func primitive(s *avro.PrimitiveSchema, v any) (any, error) {
	if l := s.Logical(); l != nil {
		switch l.Type() {
		case avro.TimestampMillis, avro.LocalTimestampMillis, avro.TimestampMicros, avro.LocalTimestampMicros, avro.Date:
			ms, err := integer(v, math.MinInt64, math.MaxInt64)
			if err != nil {
				return nil, err
			}
			return time.UnixMilli(ms).UTC(), nil
		case avro.TimeMillis, avro.TimeMicros:
			ms, err := integer(v, math.MinInt64, math.MaxInt64)
			if err != nil {
				return nil, err
			}
			return time.Duration(ms) * time.Millisecond, nil
		case avro.Decimal:
			n, ok := v.(json.Number)
			if !ok {
				return nil, fmt.Errorf("want a number, not %s", jsonKind(v))
			}
			r, ok := new(big.Rat).SetString(n.String())
			if !ok {
				return nil, fmt.Errorf("%s is not a decimal", n)
			}
			return r, nil
		}
	}
	switch s.Type() {
	case avro.Boolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, fmt.Errorf("want a boolean, not %s", jsonKind(v))
	case avro.Int:
		n, err := integer(v, math.MinInt32, math.MaxInt32)
		return int(n), err
	case avro.Long:
		return integer(v, math.MinInt64, math.MaxInt64)
	case avro.Float:
		f, err := number(v)
		return float32(f), err
	case avro.Double:
		return number(v)
	case avro.String:
		if str, ok := v.(string); ok {
			return str, nil
		}
		return nil, fmt.Errorf("want a string, not %s", jsonKind(v))
	case avro.Bytes:
		if str, ok := v.(string); ok {
			return []byte(str), nil
		}
		return nil, fmt.Errorf("want a string (bytes), not %s", jsonKind(v))
	case avro.Null:
		if v != nil {
			return nil, fmt.Errorf("want null, not %s", jsonKind(v))
		}
		return nil, nil
	}
	return nil, fmt.Errorf("Avro %s values are not supported", s.Type())
}

func integer(v any, lo, hi int64) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("want an integer, not %s", jsonKind(v))
	}
	i, err := n.Int64()
	if err != nil || i < lo || i > hi {
		return 0, fmt.Errorf("%s is not an integer in [%d, %d]", n, lo, hi)
	}
	return i, nil
}

func number(v any) (float64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("want a number, not %s", jsonKind(v))
	}
	return n.Float64()
}

// jsonKind names a JSON value's kind for errors.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
