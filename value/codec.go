package value

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// ErrCorrupt is returned by DecodeBinary when the bytes were not written by
// AppendBinary (truncated, unknown kind, or lengths that overrun the input).
var ErrCorrupt = errors.New("value: corrupt binary encoding")

// AppendJSON appends v as compact JSON. Integers are written exactly; floats
// in the shortest form that reads back to the same float64, always with a
// fraction or exponent so that they read back as floats.
func AppendJSON(b []byte, v Value) []byte {
	switch v.kind {
	case KindNull:
		return append(b, "null"...)
	case KindBool:
		if v.n == 1 {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case KindInt:
		return strconv.AppendInt(b, int64(v.n), 10)
	case KindFloat:
		return appendFloat(b, math.Float64frombits(v.n))
	case KindString:
		return appendString(b, v.Str())
	case KindList:
		b = append(b, '[')
		for i, item := range v.List() {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSON(b, item)
		}
		return append(b, ']')
	case KindRecord:
		r := v.Record()
		b = append(b, '{')
		for i, k := range r.Keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = AppendJSON(b, r.Values[i])
		}
		return append(b, '}')
	}
	return append(b, "null"...)
}

// A JSONEncoder is AppendJSON for a stream of values that are mostly
// records of one shape (a sink's output): it keeps the encoded keys of the
// last top-level record's Keys slice, so that the next record with the same
// slice (records built from one key list share it) writes them by copying;
// and, per field, the digits of the last large integer written there (a
// window's start and end, shared by every result of the window), written
// again by copying while the field holds the same integer.
// The zero JSONEncoder is ready to use; it is not safe for concurrent use.
type JSONEncoder struct {
	keys *string   // &Keys[0] of the cached record keys
	n    int       // their number
	enc  []byte    // "k0":,"k1":... encoded, each ending with ':', each after the first with ','
	ends []int     // key i is enc[ends[i-1]:ends[i]]
	ints []lastInt // by field
}

// lastInt is the last integer of magnitude at least cachedIntMin a field held, and its digits.
type lastInt struct {
	v      int64
	n      uint8 // digits[:n]; 0: none
	digits [20]byte
}

// cachedIntMin: integers from 10 digits (event times in ms have 13) are cached; shorter
// ones are written faster than they are compared and stored.
const cachedIntMin = 1_000_000_000

// Append appends the JSON of v to b, as AppendJSON does.
func (e *JSONEncoder) Append(b []byte, v Value) []byte {
	r := v.Record()
	if r == nil || len(r.Keys) == 0 {
		return AppendJSON(b, v)
	}
	if e.keys != &r.Keys[0] || e.n != len(r.Keys) {
		if !KeepsKeys(r.Keys) {
			// A collect sink's encoder kept the keys of the widest record it wrote for as
			// long as its deployment ran: 36 sinks of events of 520,000 fields, one event each
			// in 6 deployments, ended the server out of memory (hostile round).
			if e.keys != nil {
				*e = JSONEncoder{} // what it kept of a record before
			}
			return AppendJSON(b, v)
		}
		e.keys, e.n = &r.Keys[0], len(r.Keys)
		e.enc, e.ends = e.enc[:0], e.ends[:0]
		for i, k := range r.Keys {
			if i > 0 {
				e.enc = append(e.enc, ',')
			}
			e.enc = append(appendString(e.enc, k), ':')
			e.ends = append(e.ends, len(e.enc))
		}
		if cap(e.ints) < len(r.Keys) {
			e.ints = make([]lastInt, len(r.Keys))
		} else {
			e.ints = e.ints[:len(r.Keys)]
			clear(e.ints)
		}
	}
	b = append(b, '{')
	start := 0
	for i, end := range e.ends {
		b = append(b, e.enc[start:end]...)
		start = end
		if x := r.Values[i]; x.kind == KindInt {
			if n := int64(x.n); n >= cachedIntMin || n <= -cachedIntMin {
				b = e.ints[i].append(b, n)
				continue
			}
		}
		b = AppendJSON(b, r.Values[i])
	}
	return append(b, '}')
}

// append appends v's digits, from the cache when it holds v.
func (l *lastInt) append(b []byte, v int64) []byte {
	if l.n == 0 || l.v != v {
		l.v, l.n = v, uint8(len(strconv.AppendInt(l.digits[:0], v, 10)))
	}
	return append(b, l.digits[:l.n]...)
}

// MarshalJSON implements json.Marshaler.
func (v Value) MarshalJSON() ([]byte, error) { return AppendJSON(nil, v), nil }

func appendFloat(b []byte, f float64) []byte {
	if m, k, ok := shortFloat(f); ok {
		return appendShortFloat(b, f < 0, m, k)
	}
	start := len(b)
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	for _, c := range b[start:] {
		if c == '.' || c == 'e' || c == 'E' {
			return b
		}
	}
	return append(b, '.', '0')
}

// shortFloat finds the decimal m/10^k (k at most 3 fraction digits, m without trailing zero
// digit when k > 0) that is the shortest to read back as |f|, for 0 < |f| < 1e12: the
// decimals of a money amount or of a sum of them, which most results are. ok is false for
// any other float, which strconv formats.
//
// It gives strconv.AppendFloat(|f|, 'f', -1, 64)'s digits: below 1e12 a float's rounding
// interval is narrower than 1e-3 (its spacing is at most 2^-13), so it holds at most one
// decimal of k fraction digits, k <= 3; the check float64(m)/10^k == |f| (a correctly
// rounded division of two floats exact below 2^53, as ParseFloat reads the decimal) says it
// is that decimal, and the smallest such k gives the fewest digits. Round(|f|*10^k) finds
// that m: the product's rounding error (at most 1/16 below 1e15) and the distance from |f| to
// m/10^k (under half a spacing, at most 0.061 once scaled) stay under 1/2; and no decimal of
// at most 3 fraction digits below 1e12 lies halfway between two floats, so how ties round
// never matters. TestShortFloat compares with strconv.
func shortFloat(f float64) (m uint64, k int, ok bool) {
	a := math.Abs(f)
	if !(a > 0 && a < 1e12) {
		return 0, 0, false
	}
	// The decimal with k <= 3 is the one with k = 3 (any with fewer digits is it with zeros
	// appended): one check at k = 3, then the trailing zero digits dropped.
	// RoundToEven, not Round: the same m (ties never matter, above), in one instruction
	// where the CPU has SSE4.1 (Round is a dozen).
	r := math.RoundToEven(a * 1000)
	if r/1000 != a {
		return 0, 0, false
	}
	m, k = uint64(r), 3
	for k > 0 && m%10 == 0 {
		m, k = m/10, k-1
	}
	return m, k, true
}

// appendShortFloat appends the decimal m/10^k of shortFloat, with "-" when neg, and ".0"
// when it is whole (a float stays a float in JSON, see appendFloat).
func appendShortFloat(b []byte, neg bool, m uint64, k int) []byte {
	if neg {
		b = append(b, '-')
	}
	switch k {
	case 0:
		return append(strconv.AppendUint(b, m, 10), '.', '0')
	case 1:
		return append(strconv.AppendUint(b, m/10, 10), '.', byte('0'+m%10))
	case 2:
		f := m % 100
		return append(strconv.AppendUint(b, m/100, 10), '.', byte('0'+f/10), byte('0'+f%10))
	}
	f := m % 1000
	return append(strconv.AppendUint(b, m/1000, 10), '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

const hexDigits = "0123456789abcdef"

func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	run := 0 // s[run:i] is yet to be appended as it is
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[run:i]...)
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
		}
		run = i
	}
	b = append(b, s[run:]...)
	return append(b, '"')
}

// AppendBinary appends a self-delimiting binary encoding of v, for
// checkpoints. DecodeBinary reads it back.
func AppendBinary(b []byte, v Value) []byte {
	b = append(b, byte(v.kind))
	switch v.kind {
	case KindBool, KindInt, KindFloat:
		b = binary.LittleEndian.AppendUint64(b, v.n)
	case KindString:
		b = binary.AppendUvarint(b, v.n)
		b = append(b, v.Str()...)
	case KindList:
		l := v.List()
		b = binary.AppendUvarint(b, uint64(len(l)))
		for _, item := range l {
			b = AppendBinary(b, item)
		}
	case KindRecord:
		r := v.Record()
		b = binary.AppendUvarint(b, uint64(len(r.Keys)))
		for i, k := range r.Keys {
			b = binary.AppendUvarint(b, uint64(len(k)))
			b = append(b, k...)
			b = AppendBinary(b, r.Values[i])
		}
	}
	return b
}

// DecodeBinary reads one value written by AppendBinary from the front of b and
// returns it with the rest of b. It returns ErrCorrupt (wrapped) on bad input.
func DecodeBinary(b []byte) (Value, []byte, error) {
	return decodeBinary(b, 0)
}

const maxDepth = 1000

func decodeBinary(b []byte, depth int) (Value, []byte, error) {
	if depth > maxDepth {
		return Value{}, nil, fmt.Errorf("%w: nested deeper than %d", ErrCorrupt, maxDepth)
	}
	if len(b) == 0 {
		return Value{}, nil, fmt.Errorf("%w: empty", ErrCorrupt)
	}
	k := Kind(b[0])
	b = b[1:]
	switch k {
	case KindNull:
		return Value{}, b, nil
	case KindBool, KindInt, KindFloat:
		if len(b) < 8 {
			return Value{}, nil, fmt.Errorf("%w: truncated number", ErrCorrupt)
		}
		n := binary.LittleEndian.Uint64(b)
		if k == KindBool && n > 1 {
			return Value{}, nil, fmt.Errorf("%w: boolean %d", ErrCorrupt, n)
		}
		if k == KindFloat {
			f := math.Float64frombits(n)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return Value{}, nil, fmt.Errorf("%w: non-finite float", ErrCorrupt)
			}
		}
		return Value{kind: k, n: n}, b[8:], nil
	case KindString:
		s, rest, err := decodeString(b)
		if err != nil {
			return Value{}, nil, err
		}
		return String(s), rest, nil
	case KindList:
		n, rest, err := decodeLen(b)
		if err != nil {
			return Value{}, nil, err
		}
		items := make([]Value, 0, min(n, len(rest)))
		for range n {
			var item Value
			item, rest, err = decodeBinary(rest, depth+1)
			if err != nil {
				return Value{}, nil, err
			}
			items = append(items, item)
		}
		return List(items), rest, nil
	case KindRecord:
		n, rest, err := decodeLen(b)
		if err != nil {
			return Value{}, nil, err
		}
		keys := make([]string, 0, min(n, len(rest)))
		vals := make([]Value, 0, min(n, len(rest)))
		for range n {
			var key string
			key, rest, err = decodeString(rest)
			if err != nil {
				return Value{}, nil, err
			}
			var item Value
			item, rest, err = decodeBinary(rest, depth+1)
			if err != nil {
				return Value{}, nil, err
			}
			keys = append(keys, key)
			vals = append(vals, item)
		}
		return NewRecord(keys, vals), rest, nil
	}
	return Value{}, nil, fmt.Errorf("%w: unknown kind %d", ErrCorrupt, k)
}

func decodeLen(b []byte) (int, []byte, error) {
	n, used := binary.Uvarint(b)
	if used <= 0 || n > uint64(len(b)) {
		return 0, nil, fmt.Errorf("%w: bad length", ErrCorrupt)
	}
	return int(n), b[used:], nil
}

func decodeString(b []byte) (string, []byte, error) {
	n, rest, err := decodeLen(b)
	if err != nil {
		return "", nil, err
	}
	if n > len(rest) {
		return "", nil, fmt.Errorf("%w: string overruns input", ErrCorrupt)
	}
	return string(rest[:n]), rest[n:], nil
}
