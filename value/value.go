// Package value is the exact, JSON-shaped value that flows through scenarios:
// event fields, expression results, group keys and aggregation results.
//
// Integers are kept as int64 and never pass through float64, so
// 9223372036854775807 survives decoding, aggregation and encoding unchanged
// (docs/semantics.md §1). A number written with a fraction or an exponent is a Float.
// Float values are always finite: constructors refuse NaN and ±Inf, so every
// Value can be written as JSON (docs/semantics.md §5, "results are JSON-safe").
package value

import (
	"math"
	"strconv"
	"strings"
	"unsafe"
)

// Kind is the JSON type of a Value.
type Kind uint8

// The kinds, in the order Compare sorts them.
const (
	KindNull Kind = iota
	KindBool
	KindInt
	KindFloat
	KindString
	KindList
	KindRecord
)

func (k Kind) String() string {
	switch k {
	case KindNull:
		return "null"
	case KindBool:
		return "boolean"
	case KindInt:
		return "integer"
	case KindFloat:
		return "float"
	case KindString:
		return "string"
	case KindList:
		return "list"
	case KindRecord:
		return "record"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is an immutable JSON value. The zero Value is null.
// Copying a Value is cheap (24 bytes); strings, lists and records share
// their backing arrays, which must not be modified after construction.
type Value struct {
	// p points at a string's bytes, a list's first item or a *Record.
	p unsafe.Pointer
	// n is a boolean (0/1), int64 bits or float64 bits, or the length of a
	// string or list.
	n    uint64
	kind Kind
}

// Record is an ordered JSON object. Keys are unique; order is kept for output.
type Record struct {
	Keys   []string
	Values []Value
}

// Get returns the field named key and whether it exists.
func (r *Record) Get(key string) (Value, bool) {
	for i, k := range r.Keys {
		if k == key {
			return r.Values[i], true
		}
	}
	return Value{}, false
}

// Null is the null value.
func Null() Value { return Value{} }

// Bool returns a boolean value.
func Bool(b bool) Value {
	if b {
		return Value{kind: KindBool, n: 1}
	}
	return Value{kind: KindBool}
}

// Int returns an integer value.
func Int(i int64) Value { return Value{kind: KindInt, n: uint64(i)} }

// Float returns a float value. NaN and ±Inf are not JSON numbers; they become
// null, so that a Value can always be written out.
func Float(f float64) Value {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return Value{}
	}
	return Value{kind: KindFloat, n: math.Float64bits(f)}
}

// String returns a string value.
func String(s string) Value {
	return Value{kind: KindString, p: unsafe.Pointer(unsafe.StringData(s)), n: uint64(len(s))}
}

// List returns a list value. The items are kept, not copied (List of the
// value returns them with their capacity cut to their length).
func List(items []Value) Value {
	return Value{kind: KindList, p: unsafe.Pointer(unsafe.SliceData(items)), n: uint64(len(items))}
}

// NewRecord returns a record value with the given keys and values, in order.
// The slices are kept, not copied; keys must be unique.
func NewRecord(keys []string, values []Value) Value {
	return recordValue(&Record{Keys: keys, Values: values})
}

func recordValue(r *Record) Value { return Value{kind: KindRecord, p: unsafe.Pointer(r)} }

// Kind returns the value's JSON type.
func (v Value) Kind() Kind { return v.kind }

// KindBits returns the kind and the raw 64 bits of a boolean (0 or 1), an
// integer (two's complement) or a float (IEEE 754), without copying the
// Value: for hot loops, where passing the 48-byte Value by value to the
// accessors costs more than the work. Other kinds give 0 bits.
func (v *Value) KindBits() (Kind, uint64) {
	if v.kind >= KindString {
		return v.kind, 0
	}
	return v.kind, v.n
}

// IsNull reports whether v is null.
func (v Value) IsNull() bool { return v.kind == KindNull }

// IsNumber reports whether v is an integer or a float.
func (v Value) IsNumber() bool { return v.kind == KindInt || v.kind == KindFloat }

// Bool returns the boolean; false for other kinds.
func (v Value) Bool() bool { return v.kind == KindBool && v.n == 1 }

// Int returns the integer; 0 for other kinds.
func (v Value) Int() int64 {
	if v.kind != KindInt {
		return 0
	}
	return int64(v.n)
}

// Float returns a number as float64 (integers are converted, possibly
// rounding beyond 2^53); 0 for other kinds.
func (v Value) Float() float64 {
	switch v.kind {
	case KindFloat:
		return math.Float64frombits(v.n)
	case KindInt:
		return float64(int64(v.n))
	}
	return 0
}

// Str returns the string; "" for other kinds.
func (v Value) Str() string {
	if v.kind != KindString {
		return ""
	}
	return unsafe.String((*byte)(v.p), int(v.n))
}

// List returns the items of a list; nil for other kinds.
func (v Value) List() []Value {
	if v.kind != KindList {
		return nil
	}
	return unsafe.Slice((*Value)(v.p), int(v.n))
}

// Record returns the record; nil for other kinds.
func (v Value) Record() *Record {
	if v.kind != KindRecord {
		return nil
	}
	return (*Record)(v.p)
}

// Compare orders values totally: first by kind (null < boolean < number <
// string < list < record), numbers by numeric value (an integer and a float
// that are equal compare by kind, integer first, so the order stays total),
// strings bytewise, lists element by element, records field by field.
// It returns -1, 0 or +1.
func Compare(a, b Value) int {
	ka, kb := a.kind, b.kind
	if a.IsNumber() && b.IsNumber() {
		if c := compareNumbers(a, b); c != 0 {
			return c
		}
		return cmpInt(int64(ka), int64(kb))
	}
	if ka != kb {
		return cmpInt(int64(ka), int64(kb))
	}
	switch ka {
	case KindNull:
		return 0
	case KindBool:
		return cmpInt(int64(a.n), int64(b.n))
	case KindString:
		switch {
		case a.Str() < b.Str():
			return -1
		case a.Str() > b.Str():
			return 1
		}
		return 0
	case KindList:
		la, lb := a.List(), b.List()
		for i := 0; i < len(la) && i < len(lb); i++ {
			if c := Compare(la[i], lb[i]); c != 0 {
				return c
			}
		}
		return cmpInt(int64(len(la)), int64(len(lb)))
	case KindRecord:
		ra, rb := a.Record(), b.Record()
		for i := 0; i < len(ra.Keys) && i < len(rb.Keys); i++ {
			switch {
			case ra.Keys[i] < rb.Keys[i]:
				return -1
			case ra.Keys[i] > rb.Keys[i]:
				return 1
			}
			if c := Compare(ra.Values[i], rb.Values[i]); c != 0 {
				return c
			}
		}
		return cmpInt(int64(len(ra.Keys)), int64(len(rb.Keys)))
	}
	return 0
}

// compareNumbers compares two numbers exactly, also when an int64 is beyond
// float64's 53-bit mantissa.
func compareNumbers(a, b Value) int {
	if a.kind == KindInt && b.kind == KindInt {
		return cmpInt(int64(a.n), int64(b.n))
	}
	if a.kind == KindFloat && b.kind == KindFloat {
		return cmpFloat(a.Float(), b.Float())
	}
	if a.kind == KindInt {
		return -compareFloatInt(b.Float(), int64(a.n))
	}
	return compareFloatInt(a.Float(), int64(b.n))
}

// compareFloatInt compares f with i exactly.
func compareFloatInt(f float64, i int64) int {
	const two63 = 9223372036854775808.0
	switch {
	case f >= two63:
		return 1
	case f < -two63:
		return -1
	}
	t := math.Trunc(f)
	ti := int64(t) // exact: |t| < 2^63
	if c := cmpInt(ti, i); c != 0 {
		return c
	}
	return cmpFloat(f, t)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Equal reports whether Compare(a, b) == 0.
func Equal(a, b Value) bool { return Compare(a, b) == 0 }

// MakeRecord returns a record with the given keys and null values, and its
// values slice for the caller to fill. For up to 16 keys the record and its
// values are one allocation. The values must be set before the record is
// shared and not changed after (see Value); keys are kept, not copied.
func MakeRecord(keys []string) (Value, []Value) {
	r := newRecord(len(keys))
	r.Keys = keys
	return recordValue(r), r.Values
}

// Clone returns a copy of v that shares no memory with it: its strings, lists and records
// (keys too) are copied, at every depth. A value that lives only during a call (an Output's)
// is kept so. It copies what v holds once; values nest at most MaxDepth levels where they are
// made (decoding, expressions), so the recursion is bounded.
func Clone(v Value) Value {
	switch v.kind {
	case KindString:
		return String(strings.Clone(v.Str()))
	case KindList:
		items := v.List()
		out := make([]Value, len(items))
		for i, x := range items {
			out[i] = Clone(x)
		}
		return List(out)
	case KindRecord:
		r := v.Record()
		keys := make([]string, len(r.Keys))
		for i, k := range r.Keys {
			keys[i] = strings.Clone(k)
		}
		vals := make([]Value, len(r.Values))
		for i, x := range r.Values {
			vals[i] = Clone(x)
		}
		return NewRecord(keys, vals)
	}
	return v
}

// MaxKeptKeys and MaxKeptKeyBytes bound the record keys a cache that outlives its record keeps
// (a decoder's shapes, an encoder's encoded keys, a path's field hint): 64 KiB of string headers,
// so that records of 300 to 1,000 fields, common, keep theirs (at 256, they decoded 2.5 to 3
// times slower, review), and 64 KiB of key bytes.
const (
	MaxKeptKeys     = 4096
	MaxKeptKeyBytes = 64 << 10
)

// KeepsKeys reports whether keys, a record's, are within MaxKeptKeys and MaxKeptKeyBytes: a
// cache keeping them would keep no more than that of a record it has let go.
func KeepsKeys(keys []string) bool {
	if len(keys) > MaxKeptKeys {
		return false
	}
	n := 0
	for _, k := range keys {
		if n += len(k); n > MaxKeptKeyBytes {
			return false
		}
	}
	return true
}
