package value

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// This file decodes JSON text (RFC 8259, https://www.rfc-editor.org/rfc/rfc8259)
// into Values. It is on the hot path of event ingestion (one NDJSON line per
// event), so it is a hand-written recursive-descent parser over []byte that
// builds Values directly, and allocates little:
//
//   - Values of open lists and records are collected on a stack reused by the
//     Decoder and copied out once, when the list or record ends, into an
//     exactly sized slice. A record of up to 16 members is one allocation:
//     its Record and its values array together (newRecord).
//   - The contents of all strings of one call are unescaped into a reused
//     buffer and copied out once, at the end, into one string that the string
//     Values are substrings of (finish). So a call makes one string
//     allocation however many strings the document has, and no Value aliases
//     the caller's bytes.
//   - Record keys are interned per Decoder, and each Decoder remembers the
//     keys of the last record at each depth (shape): the keys of the next one
//     are compared with the input bytes without scanning, and a record with
//     the same keys shares the Keys slice (Keys are immutable, see Record).
//     A stream of events of one shape thus allocates no keys at all.
//   - Integers are accumulated digit by digit into an int64 and never pass
//     through float64; other numbers go to strconv.ParseFloat without a
//     string allocation. The checks that no number changes silently (an
//     integer beyond int64, a float that overflows or underflows) cost
//     nothing on the way of a number that passes them: one comparison with
//     0 for a float; the JSON path of a failing number is worked out only
//     then (fieldPath).
//
// A flat event of up to 16 fields thus costs two allocations: its record
// and its strings.
//
// For events of which only some top-level fields are read, ParseFields keeps
// those (a FieldSet) and checks the rest without decoding them; the Decoder
// remembers, per key as written, whether the set has it, so a stream of one
// shape looks nothing up. ParseFieldsInto puts the kept values into a slice
// the caller reuses: no record at all, so one allocation (the strings) per
// flat event, and none when its strings are few, short and were in recent
// events (a stream's group keys): those are handed out again.

// MaxDepth is the deepest nesting of lists and records that ParseJSON and a
// Decoder accept: 1000 nested '[' or '{' are allowed, 1001 are an error.
const MaxDepth = 1000

// MaxValues is the most values one document may decode into (ParseJSON and a Decoder):
// every number, string, literal, list and record counts one, at any depth. Decoded, a value
// takes from 24 bytes (a number in a list) to about 100 (an empty record, {}), against as
// little as 2 bytes of JSON: a 10 MiB event of 3.5 million {} took 600 MB to decode, and ten
// of them at once stopped the server (found by a hostile client). At this bound a document
// takes at most about 60 MB decoded; one past it is an error at the first value beyond.
const MaxValues = 1 << 19

// SyntaxError describes why JSON text could not be decoded and where.
type SyntaxError struct {
	// Offset is the byte offset in the input of the problem: the first byte
	// that cannot continue a valid document, len(input) when the input ends
	// too early, the opening quote of an unterminated string, the first byte
	// of an out-of-range number, or the bracket that nests too deep.
	Offset int64
	Msg    string // what is wrong, without the offset
	// Field is, for a number the decoder cannot keep exactly, the JSON path of
	// its member: "amount", "items[2].price", `["long name"]`, "[0]"; empty
	// for a number that is the whole document, and for other errors.
	Field string
}

func (e *SyntaxError) Error() string {
	at := "invalid JSON at byte " + strconv.FormatInt(e.Offset, 10)
	if e.Field != "" {
		at += " (field " + e.Field + ")"
	}
	return at + ": " + e.Msg
}

// Messages of errors that valid JSON (as encoding/json.Valid sees it) can
// still produce. The three number messages are the numbers that would change
// silently if decoded: none is rounded to another integer, an infinity or 0.
const (
	msgNumberRange     = "number out of range: beyond float64 (about ±1.8e308)"
	msgIntegerRange    = "integer out of range: beyond int64 (±9223372036854775807) it would not be exact; send it as a string or with a fraction or exponent"
	msgNumberUnderflow = "number out of range: too small for float64, it would become 0"
	msgTooDeep         = "nested deeper than 1000 levels"
	msgTooManyValues   = "more than 524288 values (numbers, strings, literals, lists and records at any depth) in one document"
)

// ParseJSON decodes one JSON value (RFC 8259) from b. Whitespace may surround
// it; anything else after it is an error. The result does not alias b.
//
// Shapes:
//   - null, true and false become Null and Bool.
//   - A number without fraction or exponent becomes an Int, exactly (-0
//     becomes Int 0); one beyond int64, such as 9223372036854775808, is an
//     error rather than a rounded float. A number with a fraction or
//     exponent becomes a Float ("1.0", "1e2", "-0.0" keeps its sign), the
//     nearest float64; one beyond float64's range (1e400) is an error rather
//     than an infinity, and one so small that it would become 0 (1e-400, but
//     not 0e5 nor 0.0) is an error too. These errors name the number's member
//     (SyntaxError.Field).
//   - A string is unescaped: \uXXXX escapes, UTF-16 surrogate pairs joined;
//     a lone or mismatched surrogate escape and every byte of invalid UTF-8
//     become U+FFFD, as encoding/json does.
//   - An array becomes a list; an object becomes a record with its keys in
//     document order. A repeated key keeps the last value, at the position of
//     its first occurrence ({"a":1,"b":2,"a":3} is {"a":3,"b":2}).
//
// Errors are *SyntaxError: invalid syntax (including leading zeros such as
// "01", "-" or "1." or ".5" or "1e", NaN and Infinity, raw control
// characters in strings, invalid escapes, anything unterminated, trailing
// data, a byte order mark), an integer beyond int64, a number out of
// float64's range (over or under), nesting deeper than MaxDepth, and more than MaxValues values.
// Invalid UTF-8 is not an error (encoding/json accepts it too).
//
// Records may share their Keys slices with other records (see Decoder).
// ParseJSON takes a Decoder from a pool; a caller decoding many documents in
// one goroutine can keep its own Decoder instead.
func ParseJSON(b []byte) (Value, error) {
	d := decoderPool.Get().(*Decoder)
	v, err := d.Parse(b)
	d.trim()
	decoderPool.Put(d)
	return v, err
}

var decoderPool = sync.Pool{New: func() any { return new(Decoder) }}

// A Decoder decodes JSON documents into Values, reusing its buffers (and the
// record keys it has seen) from one call to the next. Its zero value is ready
// to use. It is not safe for concurrent use.
//
// The Values it returns never alias the input nor the Decoder's buffers, and
// stay valid after further calls. Records decoded by one Decoder may share
// their Keys slices and key strings with one another.
type Decoder struct {
	b      []byte // the input of the current call; nil between calls
	depth  int    // lists and records open
	values int    // values decoded in the current call (MaxValues)

	vals   []Value  // values of the open lists and records, innermost last
	keys   []string // keys of the open records, innermost last
	strbuf []byte   // unescaped contents of the strings of the current call
	ends   []int    // string number k ends at strbuf[ends[k]]
	fix    []*Value // string values moved into lists and records
	esc    []byte   // scratch for unescaping a key

	intern      map[string]string      // key bytes to a shared string
	shapes      [shapeDepth]shape      // last record keys at each depth
	fieldsShape shape                  // last keys kept by ParseFields
	inTok       []byte                 // keys of the last ParseFields object, as written
	inEnds      []int                  // key k ends at inTok[inEnds[k]]
	inPlain     []bool                 // key k has no escapes
	inIdx       []int32                // key k's position in inFS, -1 when not wanted
	inFS        *FieldSet              // the set inIdx was worked out for
	present     uint64                 // ParseFieldsInto's members found
	recent      *[recentStrings]string // ParseFieldsInto's recent short strings, by hash
	seen        map[string]int         // scratch for removing repeated keys
}

const (
	shapeDepth     = 8    // depths whose last record keys are remembered
	maxInternKeys  = 4096 // the intern table is emptied when it gets this big
	maxInternLen   = 128  // longer keys are not interned
	maxPooledVals  = 1 << 14
	maxPooledBytes = 1 << 20
)

// Parse decodes one JSON value from b, as ParseJSON does.
func (d *Decoder) Parse(b []byte) (Value, error) {
	d.begin(b)
	i, err := d.parseValue(skipSpace(b, 0))
	if err == nil {
		if i = skipSpace(b, i); i < len(b) {
			err = d.unexpected(i, "", " after the JSON value")
		}
	}
	if err != nil {
		d.abort()
		return Value{}, err
	}
	return d.finish(), nil
}

// Check reports whether b is one JSON value that Parse decodes, with Parse's errors (syntax,
// number range, MaxDepth, MaxValues), without building it: what a caller decoding b another
// way (encoding/json into any, for a JSON Schema) checks first, so that it meets the same
// bounds.
func (d *Decoder) Check(b []byte) error {
	d.begin(b)
	i, err := d.skipValue(skipSpace(b, 0))
	if err == nil {
		if i = skipSpace(b, i); i < len(b) {
			err = d.unexpected(i, "", " after the JSON value")
		}
	}
	d.abort()
	return err
}

// ParseFields decodes a JSON object from b (whitespace may surround it,
// nothing else may follow), keeping only the members whose names are in want.
// It returns a record of those members in document order; a repeated name
// keeps its last value at the position of its first occurrence, as in Parse.
// The other members are not decoded into Values, but their syntax is checked
// as strictly as Parse checks it (also nesting depth and number range), so
// ParseFields fails exactly when Parse fails or b is not an object, and
// otherwise returns Parse's record without the members not wanted.
// A document that is not an object is a *SyntaxError at its first byte.
// want is only read.
func (d *Decoder) ParseFields(b []byte, want *FieldSet) (Value, error) {
	if err := d.parseFields(b, want, nil); err != nil {
		return Value{}, err
	}
	return d.finish(), nil
}

// ParseObject is Parse for a document that must be a JSON object (an
// event): it fails exactly when ParseFields fails, with the same error.
func (d *Decoder) ParseObject(b []byte) (Value, error) {
	if i := skipSpace(b, 0); i >= len(b) || b[i] != '{' {
		return d.ParseFields(b, nil) // fails at that byte
	}
	return d.Parse(b)
}

// ParseFieldsInto is ParseFields without the record: the value of the member
// named want.Names()[k] goes to dst[k], and bit k of present is set when the
// object has that member (a repeated name keeps its last value). dst must
// have want.Len() elements, and want at most MaxFieldsInto names; the
// elements of members the object lacks are set to null. It fails exactly
// when ParseFields fails, and makes no allocation for the record: one for
// the strings of the call, if any (none when they are all recent strings:
// up to 4 top-level strings of up to 32 bytes seen in recent calls), and
// those of nested values.
func (d *Decoder) ParseFieldsInto(b []byte, want *FieldSet, dst []Value) (present uint64, err error) {
	if want.Len() > MaxFieldsInto || len(dst) != want.Len() {
		return 0, fmt.Errorf("value: ParseFieldsInto with %d names and %d values (at most %d)", want.Len(), len(dst), MaxFieldsInto)
	}
	clear(dst)
	d.present = 0
	if err := d.parseFields(b, want, dst); err != nil {
		clear(dst)
		return 0, err
	}
	if !d.reuseRecent(dst) {
		d.settle(dst) // the fields missing are null, not strings
		d.keepRecent(dst)
	}
	return d.present, nil
}

// The recent strings of ParseFieldsInto: events of a stream repeat the same short strings
// (group keys, kinds, codes), and a string equal to one of the last calls' is handed out
// again instead of being allocated (two entries a hash, so thousands of keys are held). A call with only top-level strings, few and short, all
// of them recent, allocates nothing.
const (
	recentStrings   = 4096 // entries of the table, by hash of the bytes
	recentMaxString = 32   // longer strings are not kept
	recentMaxCall   = 4    // nor those of a call with more strings
	recentMaxArena  = 64   // nor those of a call with more bytes of strings (what one pins)
)

// reuseRecent ends a ParseFieldsInto call whose strings are all recent: it points the
// string values of dst at them and says so; otherwise it changes nothing.
func (d *Decoder) reuseRecent(dst []Value) bool {
	if d.recent == nil || len(d.fix) > 0 || len(d.ends) > recentMaxCall {
		return false
	}
	var found [recentMaxCall]string
	start := 0
	for k, end := range d.ends {
		b := d.strbuf[start:end]
		if len(b) > recentMaxString {
			return false
		}
		h := recentHash(b)
		s := d.recent[h]
		if s != string(b) {
			if s = d.recent[h^1]; s != string(b) {
				return false
			}
		}
		found[k], start = s, end
	}
	for k := range dst {
		if dst[k].kind == KindString {
			dst[k] = String(found[dst[k].n])
		}
	}
	d.b = nil
	return true
}

// keepRecent remembers the strings a settled ParseFieldsInto call gave, when they are few
// and short.
func (d *Decoder) keepRecent(dst []Value) {
	if len(d.ends) == 0 || len(d.ends) > recentMaxCall || len(d.strbuf) > recentMaxArena {
		return
	}
	if d.recent == nil {
		d.recent = new([recentStrings]string)
	}
	for k := range dst {
		if dst[k].kind == KindString {
			// Two entries a hash: the newest string, and the one it replaced.
			s := dst[k].Str()
			h := recentHash(unsafe.Slice(unsafe.StringData(s), len(s)))
			d.recent[h^1], d.recent[h] = d.recent[h], s
		}
	}
}

// recentHash is the entry of b in the recent strings (FNV-1a).
func recentHash(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	return h % recentStrings
}

// MaxFieldsInto is the most names a FieldSet given to ParseFieldsInto may
// have.
const MaxFieldsInto = 64

// parseFields parses the object b for ParseFields (into == nil: the record
// is left on d.vals) or ParseFieldsInto.
func (d *Decoder) parseFields(b []byte, want *FieldSet, into []Value) error {
	d.begin(b)
	i := skipSpace(b, 0)
	var err error
	switch {
	case i >= len(b):
		err = d.eof(i)
	case b[i] != '{':
		err = d.unexpected(i, "", ", expected a JSON object")
	default:
		d.values++ // the object, as parseValue counts it: ParseFields fails where Parse does
		i, err = d.parseObjectFields(i, want, into)
	}
	if err == nil {
		if i = skipSpace(b, i); i < len(b) {
			err = d.unexpected(i, "", " after the JSON value")
		}
	}
	if err != nil {
		d.abort()
	}
	return err
}

// FieldSet is the set of top-level member names ParseFields keeps, made
// once: a Decoder remembers, for each member name as written in the last
// object, whether the set has it, so that events of one shape are matched
// without looking names up. The nil *FieldSet is the empty set.
type FieldSet struct {
	names []string
	index map[string]int
}

// NewFieldSet returns the set of names (repeated names count once; the
// first occurrence gives the position).
func NewFieldSet(names ...string) *FieldSet {
	fs := &FieldSet{index: make(map[string]int, len(names))}
	for _, n := range names {
		if _, ok := fs.index[n]; !ok {
			fs.index[n] = len(fs.names)
			fs.names = append(fs.names, n)
		}
	}
	return fs
}

// Len returns the number of names.
func (fs *FieldSet) Len() int {
	if fs == nil {
		return 0
	}
	return len(fs.names)
}

// Names returns the names in order; the caller must not modify them.
func (fs *FieldSet) Names() []string {
	if fs == nil {
		return nil
	}
	return fs.names
}

// Index returns the position of name, or -1 when the set lacks it.
func (fs *FieldSet) Index(name string) int {
	if fs == nil {
		return -1
	}
	if k, ok := fs.index[name]; ok {
		return k
	}
	return -1
}

func (d *Decoder) begin(b []byte) {
	d.b = b
	d.depth = 0
	d.values = 0
	d.vals = d.vals[:0]
	d.keys = d.keys[:0]
	d.strbuf = d.strbuf[:0]
	d.ends = d.ends[:0]
	d.fix = d.fix[:0]
}

// abort drops what a failed call built, so that the Decoder keeps nothing
// alive.
func (d *Decoder) abort() {
	clear(d.vals)
	clear(d.keys)
	clear(d.fix)
	d.b = nil
}

// finish copies the strings of the call into one allocation, points the
// string values at it and returns the decoded value.
func (d *Decoder) finish() Value {
	d.settle(d.vals[:1])
	root := d.vals[0]
	d.vals[0] = Value{}
	return root
}

// settle copies the strings of the call into one allocation (none when
// there are none) and points at it the string values still pending: those
// of top, and those moved into lists and records (d.fix). It ends the call.
func (d *Decoder) settle(top []Value) {
	arena := string(d.strbuf) // the call's only string allocation
	for k := range top {
		if top[k].kind == KindString {
			top[k] = String(d.span(arena, top[k].n))
		}
	}
	for _, p := range d.fix {
		*p = String(d.span(arena, p.n))
	}
	clear(d.fix)
	d.b = nil
}

// span returns string number k of the call.
func (d *Decoder) span(arena string, k uint64) string {
	start := 0
	if k > 0 {
		start = d.ends[k-1]
	}
	return arena[start:d.ends[k]]
}

// Release lets go of what the last document decoded to that the Decoder's buffers still
// reach: the buffers an unusually big document grew (as a pooled Decoder's are), and the
// values and keys left in those it keeps. A Decoder kept for the next document (an engine's
// source) otherwise holds the values of the last one until a bigger document overwrites
// them: 200,000 empty objects held 5 MB.
func (d *Decoder) Release() {
	d.trim()
	clear(d.vals[:cap(d.vals)])
	clear(d.keys[:cap(d.keys)])
	clear(d.fix[:cap(d.fix)])
	d.b = nil
}

// trim drops buffers grown by an unusually big document before the Decoder
// goes back to the pool.
func (d *Decoder) trim() {
	if cap(d.vals) > maxPooledVals || cap(d.keys) > maxPooledVals || cap(d.ends) > maxPooledVals || cap(d.fix) > maxPooledVals {
		d.vals, d.keys, d.ends, d.fix = nil, nil, nil, nil
	}
	if cap(d.strbuf) > maxPooledBytes || cap(d.esc) > maxPooledBytes {
		d.strbuf, d.esc = nil, nil
	}
	if cap(d.inTok) > maxPooledBytes || cap(d.inEnds) > maxPooledVals {
		d.inTok, d.inEnds, d.inPlain, d.inIdx, d.inFS = nil, nil, nil, nil, nil
	}
	d.seen = nil
}

// parseValue decodes the value starting at b[i] and pushes it on d.vals.
func (d *Decoder) parseValue(i int) (int, error) {
	b := d.b
	if i >= len(b) {
		return i, d.eof(i)
	}
	if d.values++; d.values > MaxValues {
		return i, d.fail(i, msgTooManyValues)
	}
	switch b[i] {
	case '"':
		return d.parseString(i)
	case '{':
		return d.parseObject(i)
	case '[':
		return d.parseArray(i)
	case 't':
		d.vals = append(d.vals, Value{kind: KindBool, n: 1})
		return d.literal(i, "true")
	case 'f':
		d.vals = append(d.vals, Value{kind: KindBool})
		return d.literal(i, "false")
	case 'n':
		d.vals = append(d.vals, Value{})
		return d.literal(i, "null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return d.parseNumber(i)
	}
	return i, d.unexpected(i, "", ", expected a JSON value")
}

// literal checks that b[i:] starts with lit, whose first byte is b[i].
func (d *Decoder) literal(i int, lit string) (int, error) {
	b := d.b
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit), nil
	}
	for k := 1; k < len(lit); k++ {
		if i+k >= len(b) {
			return i + k, d.eof(i + k)
		}
		if b[i+k] != lit[k] {
			return i + k, d.unexpected(i+k, "", " in literal "+lit)
		}
	}
	panic("unreachable")
}

// parseNumber decodes the number starting at b[i].
func (d *Decoder) parseNumber(i int) (int, error) {
	b := d.b
	end, mant, intDigits, form, err := d.scanNumber(i)
	if err != nil {
		return end, err
	}
	if form == 0 {
		if intDigits <= 19 {
			if b[i] != '-' {
				if mant <= math.MaxInt64 {
					d.vals = append(d.vals, Value{kind: KindInt, n: mant})
					return end, nil
				}
			} else if mant <= 1<<63 {
				d.vals = append(d.vals, Value{kind: KindInt, n: -mant})
				return end, nil
			}
		}
		return i, d.numberFail(i, msgIntegerRange)
	}
	f, ok := shortDecimal(b[i:end], form)
	if !ok {
		if f, err = d.parseFloat(i, end); err != nil {
			return i, err
		}
	}
	d.vals = append(d.vals, Value{kind: KindFloat, n: math.Float64bits(f)})
	return end, nil
}

// float64Pow10 holds the powers of ten a short decimal divides by, all exact in float64.
var float64Pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// shortDecimal converts a number with a fraction and no exponent, whose syntax was checked,
// of at most 15 digits (12.34, -0.5): its digits make an integer below 2^53 and its fraction
// a power of ten up to 1e15, both exact in float64, so one division gives the correctly
// rounded value strconv.ParseFloat gives, without parsing the number again. ok is false for
// any other number.
func shortDecimal(num []byte, form uint8) (f float64, ok bool) {
	if form != numFraction {
		return 0, false
	}
	neg := num[0] == '-'
	if neg {
		num = num[1:]
	}
	if len(num) > 16 { // 15 digits and the point
		return 0, false
	}
	var mant uint64
	frac := 0
	for k, c := range num {
		if c == '.' {
			frac = len(num) - k - 1
			continue
		}
		mant = mant*10 + uint64(c-'0')
	}
	f = float64(mant) / float64Pow10[frac]
	if neg {
		f = -f
	}
	return f, true
}

// parseFloat converts the number b[i:end], whose syntax was checked, and
// fails when float64 cannot hold it: beyond its range, or so small that it
// would be 0 though it has a digit other than 0.
func (d *Decoder) parseFloat(i, end int) (float64, error) {
	// strconv does not keep the string: no need to allocate one.
	f, err := strconv.ParseFloat(unsafe.String(&d.b[i], end-i), 64)
	if err != nil { // only ErrRange: the syntax was checked
		return 0, d.numberFail(i, msgNumberRange)
	}
	if f == 0 && !zeroDigits(d.b[i:end]) {
		return 0, d.numberFail(i, msgNumberUnderflow)
	}
	return f, nil
}

// zeroDigits reports whether the digits of the number num before its
// exponent are all 0: its value is 0 whatever the exponent.
func zeroDigits(num []byte) bool {
	for _, c := range num {
		switch {
		case c|0x20 == 'e':
			return true
		case c >= '1' && c <= '9':
			return false
		}
	}
	return true
}

// fitsInt64 reports whether an integer literal (no fraction, no exponent) of
// intDigits digits whose first 19 digits are mant fits int64.
func fitsInt64(negative bool, mant uint64, intDigits int) bool {
	switch {
	case intDigits > 19:
		return false
	case negative:
		return mant <= 1<<63
	default:
		return mant <= math.MaxInt64
	}
}

// Bits of scanNumber's result.
const (
	numFraction = 1 << iota
	numExponent
)

// scanNumber checks the syntax of the number starting at b[i] and returns
// where it ends, the value of its first 19 integer digits, how many integer
// digits it has, and whether it has a fraction or an exponent.
func (d *Decoder) scanNumber(i int) (end int, mant uint64, intDigits int, form uint8, err error) {
	b := d.b
	if b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return i, 0, 0, 0, d.eof(i)
	}
	switch c := b[i]; {
	case c == '0':
		i++
		intDigits = 1
		if i < len(b) && isDigit(b[i]) {
			return i, 0, 0, 0, d.fail(i, "leading zero in number")
		}
	case isDigit(c):
		for ; i < len(b); i++ {
			c := b[i] - '0'
			if c > 9 {
				break
			}
			if intDigits < 19 {
				mant = mant*10 + uint64(c)
			}
			intDigits++
		}
	default:
		return i, 0, 0, 0, d.unexpected(i, "", " in number, expected a digit")
	}
	if i < len(b) && b[i] == '.' {
		form |= numFraction
		i++
		if i >= len(b) {
			return i, 0, 0, 0, d.eof(i)
		}
		if !isDigit(b[i]) {
			return i, 0, 0, 0, d.unexpected(i, "", " in number, expected a digit after '.'")
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && b[i]|0x20 == 'e' {
		form |= numExponent
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) {
			return i, 0, 0, 0, d.eof(i)
		}
		if !isDigit(b[i]) {
			return i, 0, 0, 0, d.unexpected(i, "", " in number, expected a digit in the exponent")
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, mant, intDigits, form, nil
}

func isDigit(c byte) bool { return c-'0' <= 9 }

// Bits of scanString's result.
const (
	strEscaped  = 1 << iota // has a backslash escape
	strNonASCII             // has a byte >= 0x80
)

const (
	lsbs = 0x0101010101010101
	msbs = 0x8080808080808080
)

// scanString checks the syntax of the string whose opening quote is at
// b[quote] and returns the position of its closing quote and what kind of
// bytes it has.
func (d *Decoder) scanString(quote int) (int, uint8, error) {
	b := d.b
	i := quote + 1
	var flags uint8
	high := uint64(msbs) // also stop at bytes >= 0x80, until one is seen
	for {
		// Skip 8 ordinary bytes at a time.
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			q := x ^ (lsbs * '"')
			e := x ^ (lsbs * '\\')
			m := ((q-lsbs)&^q | (e-lsbs)&^e | (x-lsbs*0x20)&^x | x&high) & msbs
			if m != 0 {
				// The lowest flagged byte is the first special one.
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(b) {
			return i, 0, d.fail(quote, "string not terminated")
		}
		switch c := b[i]; {
		case c == '"':
			return i, flags, nil
		case c == '\\':
			flags |= strEscaped
			if i+1 >= len(b) {
				return i, 0, d.fail(quote, "string not terminated")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for k := i + 2; k < i+6; k++ {
					if k >= len(b) {
						return i, 0, d.fail(quote, "string not terminated")
					}
					if unhex(b[k]) < 0 {
						return k, 0, d.unexpected(k, "", " in \\u escape, expected a hexadecimal digit")
					}
				}
				i += 6
			default:
				return i + 1, 0, d.unexpected(i+1, "invalid escape: ", " after backslash in string")
			}
		case c < 0x20:
			return i, 0, d.unexpected(i, "", " in string (control characters must be escaped)")
		default:
			if c >= utf8.RuneSelf {
				flags |= strNonASCII
				high = 0
			}
			i++
		}
	}
}

// parseString decodes the string whose opening quote is at b[i]. Its
// contents go to d.strbuf; the pushed Value records which string it is and
// gets its text in finish.
func (d *Decoder) parseString(i int) (int, error) {
	end, flags, err := d.scanString(i)
	if err != nil {
		return end, err
	}
	raw := d.b[i+1 : end]
	if flags == 0 || flags == strNonASCII && utf8.Valid(raw) {
		d.strbuf = append(d.strbuf, raw...)
	} else {
		d.strbuf = appendUnescaped(d.strbuf, raw)
	}
	d.vals = append(d.vals, Value{kind: KindString, n: uint64(len(d.ends))})
	d.ends = append(d.ends, len(d.strbuf))
	return end + 1, nil
}

// parseKey decodes the object key whose opening quote is at b[i] and
// returns it as bytes, valid until the next key, the position after it, and
// whether the returned bytes are those of the input (no escapes, valid
// UTF-8).
func (d *Decoder) parseKey(i int) ([]byte, int, bool, error) {
	end, flags, err := d.scanString(i)
	if err != nil {
		return nil, end, false, err
	}
	raw := d.b[i+1 : end]
	if flags == 0 || flags == strNonASCII && utf8.Valid(raw) {
		return raw, end + 1, true, nil
	}
	d.esc = appendUnescaped(d.esc[:0], raw)
	return d.esc, end + 1, false, nil
}

// appendUnescaped appends the contents of a string whose syntax scanString
// has checked, as encoding/json unquotes them.
func appendUnescaped(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			switch c = raw[i+1]; c {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := hex4(raw[i+2:])
				i += 6
				if utf16.IsSurrogate(r) {
					// A high surrogate followed by a low one is one rune;
					// anything else is U+FFFD, and a following escape is
					// read on its own.
					dec := utf8.RuneError
					if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
						if dec = utf16.DecodeRune(r, hex4(raw[i+2:])); dec != utf8.RuneError {
							i += 6
						}
					}
					r = dec
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, c)
			}
			i += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, raw[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}

func hex4(b []byte) rune {
	return rune(unhex(b[0])<<12 | unhex(b[1])<<8 | unhex(b[2])<<4 | unhex(b[3]))
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}

// enter counts one more level of nesting for the bracket at b[i].
func (d *Decoder) enter(i int) error {
	if d.depth++; d.depth > MaxDepth {
		return d.fail(i, msgTooDeep)
	}
	return nil
}

// parseArray decodes the array whose '[' is at b[i].
func (d *Decoder) parseArray(i int) (int, error) {
	if err := d.enter(i); err != nil {
		return i, err
	}
	b := d.b
	base := len(d.vals)
	if i = skipSpace(b, i+1); i < len(b) && b[i] == ']' {
		d.depth--
		d.vals = append(d.vals, List(nil))
		return i + 1, nil
	}
	for {
		var err error
		if i, err = d.parseValue(i); err != nil {
			return i, err
		}
		if i = skipSpace(b, i); i >= len(b) {
			return i, d.eof(i)
		}
		if b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if b[i] != ']' {
			return i, d.unexpected(i, "", " after list element, expected ',' or ']'")
		}
		break
	}
	items := d.moveOut(base)
	d.vals = append(d.vals[:base], List(items))
	d.depth--
	return i + 1, nil
}

// moveOut pops d.vals[base:] into a new slice.
func (d *Decoder) moveOut(base int) []Value {
	out := make([]Value, len(d.vals)-base)
	d.moveInto(out, base)
	return out
}

// moveInto pops d.vals[base:] into out, which has room for exactly them.
func (d *Decoder) moveInto(out []Value, base int) {
	top := d.vals[base:]
	copy(out, top)
	nested := false
	for k := range out {
		switch out[k].kind {
		case KindString:
			d.fix = append(d.fix, &out[k])
		case KindList, KindRecord:
			nested = true
		}
	}
	if nested {
		// Only these hold pointers (strings get theirs in finish): clear
		// them so that the Decoder keeps no garbage alive.
		clear(top)
	}
	d.vals = d.vals[:base]
}

// newRecord returns a record with room for n values. Up to 16 values live in
// the same allocation as the Record.
func newRecord(n int) *Record {
	if n < len(recordMakers) {
		return recordMakers[n]()
	}
	return &Record{Values: make([]Value, n)}
}

var recordMakers = [...]func() *Record{
	func() *Record { return new(Record) },
	recordMaker(func(a *[1]Value) []Value { return a[:] }),
	recordMaker(func(a *[2]Value) []Value { return a[:] }),
	recordMaker(func(a *[3]Value) []Value { return a[:] }),
	recordMaker(func(a *[4]Value) []Value { return a[:] }),
	recordMaker(func(a *[5]Value) []Value { return a[:] }),
	recordMaker(func(a *[6]Value) []Value { return a[:] }),
	recordMaker(func(a *[7]Value) []Value { return a[:] }),
	recordMaker(func(a *[8]Value) []Value { return a[:] }),
	recordMaker(func(a *[9]Value) []Value { return a[:] }),
	recordMaker(func(a *[10]Value) []Value { return a[:] }),
	recordMaker(func(a *[11]Value) []Value { return a[:] }),
	recordMaker(func(a *[12]Value) []Value { return a[:] }),
	recordMaker(func(a *[13]Value) []Value { return a[:] }),
	recordMaker(func(a *[14]Value) []Value { return a[:] }),
	recordMaker(func(a *[15]Value) []Value { return a[:] }),
	recordMaker(func(a *[16]Value) []Value { return a[:] }),
}

// recordMaker returns a function that allocates a Record together with the
// array A of its values.
func recordMaker[A any](values func(*A) []Value) func() *Record {
	return func() *Record {
		block := new(struct {
			r Record
			v A
		})
		block.r.Values = values(&block.v)
		return &block.r
	}
}

// shape is the key sequence of the last record decoded at some depth. A
// record with the same keys shares its Keys slice.
type shape struct {
	keys []string
	// plain says that no key has a byte that JSON must escape ('"', '\\',
	// control characters), so that a key can be recognised by comparing its
	// bytes with the input, without scanning and unescaping.
	plain bool
}

// newShape is the shape of a record of keys, empty when KeepsKeys says they are not to be kept:
// a source's decoder kept the keys of the widest record it decoded for as long as its
// deployment ran (12.8 MB a deployment for events of 520,000 fields, hostile round).
func newShape(keys []string) shape {
	if !KeepsKeys(keys) {
		return shape{}
	}
	for _, k := range keys {
		for i := 0; i < len(k); i++ {
			if c := k[i]; c < 0x20 || c == '"' || c == '\\' {
				return shape{keys: keys}
			}
		}
	}
	return shape{keys: keys, plain: true}
}

// matchKey reports whether the string whose opening quote is at b[i] is
// key, which has no byte that needs escaping (so the input must have key's
// bytes between the quotes).
func matchKey(b []byte, i int, key string) bool {
	j := i + 1 + len(key)
	return j < len(b) && b[j] == '"' && string(b[i+1:j]) == key
}

// parseObject decodes the object whose '{' is at b[i].
func (d *Decoder) parseObject(i int) (int, error) {
	if err := d.enter(i); err != nil {
		return i, err
	}
	b := d.b
	base, kbase := len(d.vals), len(d.keys)
	var slot *shape
	var sh shape
	if d.depth < shapeDepth {
		slot = &d.shapes[d.depth]
		sh = *slot
	}
	if i = skipSpace(b, i+1); i < len(b) && b[i] == '}' {
		d.depth--
		d.vals = append(d.vals, recordValue(&Record{}))
		return i + 1, nil
	}
	// While same, the n keys so far are sh.keys[:n] and are not on d.keys.
	same, n := true, 0
	for {
		if i >= len(b) {
			return i, d.eof(i)
		}
		if b[i] != '"' {
			return i, d.unexpected(i, "", ", expected a string key")
		}
		if same && n < len(sh.keys) && sh.plain && matchKey(b, i, sh.keys[n]) {
			i += 2 + len(sh.keys[n])
		} else {
			kb, j, _, err := d.parseKey(i)
			if err != nil {
				return j, err
			}
			i = j
			if !same || n >= len(sh.keys) || string(kb) != sh.keys[n] {
				if same {
					d.keys = append(d.keys, sh.keys[:n]...)
					same = false
				}
				d.keys = append(d.keys, d.internKey(kb))
			}
		}
		n++
		var err error
		if i < len(b) && b[i] == ':' {
			i = skipSpace(b, i+1)
		} else if i, err = d.colon(i); err != nil {
			return i, err
		}
		if i, err = d.parseValue(i); err != nil {
			return i, err
		}
		if i >= len(b) || b[i] != ',' && b[i] != '}' {
			if i, err = d.afterMember(i); err != nil {
				return i, err
			}
		}
		if b[i] == '}' {
			break
		}
		i = skipSpace(b, i+1)
	}
	d.closeRecord(base, kbase, n, same, sh, slot)
	d.depth--
	return i + 1, nil
}

// colon skips the ':' after a key and the space around it.
func (d *Decoder) colon(i int) (int, error) {
	b := d.b
	if i = skipSpace(b, i); i >= len(b) {
		return i, d.eof(i)
	}
	if b[i] != ':' {
		return i, d.unexpected(i, "", " after object key, expected ':'")
	}
	return skipSpace(b, i+1), nil
}

// afterMember skips space after an object member and checks that a ',' or
// '}' follows.
func (d *Decoder) afterMember(i int) (int, error) {
	b := d.b
	if i = skipSpace(b, i); i >= len(b) {
		return i, d.eof(i)
	}
	if c := b[i]; c != ',' && c != '}' {
		return i, d.unexpected(i, "", " after object member, expected ',' or '}'")
	}
	return i, nil
}

// closeRecord pops the n members of a record and pushes the record. If
// same, its keys are the first n of sh and are not on d.keys; otherwise
// they are on d.keys from kbase. The record's keys become the shape in
// *slot (unless slot is nil).
func (d *Decoder) closeRecord(base, kbase, n int, same bool, sh shape, slot *shape) {
	var keys []string
	if same && n == len(sh.keys) {
		keys = sh.keys
	} else {
		if same {
			d.keys = append(d.keys, sh.keys[:n]...)
		}
		keys = make([]string, d.dedupe(base, kbase))
		copy(keys, d.keys[kbase:])
		clear(d.keys[kbase:])
		d.keys = d.keys[:kbase]
		if slot != nil {
			*slot = newShape(keys)
		}
	}
	r := newRecord(len(keys))
	r.Keys = keys
	d.moveInto(r.Values, base)
	d.vals = append(d.vals, recordValue(r))
}

// dedupe removes repeated keys from the open record whose members start at
// d.vals[base] and d.keys[kbase]: the first occurrence of a key gets the
// value of the last one. It returns how many members are left.
func (d *Decoder) dedupe(base, kbase int) int {
	keys, vals := d.keys[kbase:], d.vals[base:]
	n := 0
	if len(keys) <= 32 {
	next:
		for k, key := range keys {
			for j := range n {
				if keys[j] == key {
					vals[j] = vals[k]
					continue next
				}
			}
			keys[n], vals[n] = key, vals[k]
			n++
		}
	} else {
		if d.seen == nil {
			d.seen = make(map[string]int)
		}
		for k, key := range keys {
			if j, ok := d.seen[key]; ok {
				vals[j] = vals[k]
				continue
			}
			d.seen[key] = n
			keys[n], vals[n] = key, vals[k]
			n++
		}
		clear(d.seen)
	}
	clear(keys[n:])
	clear(vals[n:])
	d.keys = d.keys[:kbase+n]
	d.vals = d.vals[:base+n]
	return n
}

// internKey returns kb as a string, shared with earlier equal keys.
func (d *Decoder) internKey(kb []byte) string {
	if s, ok := d.intern[string(kb)]; ok {
		return s
	}
	s := string(kb)
	if len(s) <= maxInternLen {
		if d.intern == nil {
			d.intern = make(map[string]string)
		} else if len(d.intern) >= maxInternKeys {
			clear(d.intern)
		}
		d.intern[s] = s
	}
	return s
}

// parseObjectFields decodes the top-level object whose '{' is at b[i],
// keeping the members named in want and skipping the others. With into ==
// nil it pushes their record on d.vals; otherwise it puts their values in
// into, at their positions in want, and sets their bits in d.present.
//
// Besides the shape of the record it returns, it remembers the keys of all
// members of the object as they were written (d.inTok) and their positions
// in want (d.inIdx), so that in the next object the keys written the same
// way are recognised without scanning or looking up.
func (d *Decoder) parseObjectFields(i int, want *FieldSet, into []Value) (int, error) {
	if err := d.enter(i); err != nil {
		return i, err
	}
	b := d.b
	sh := d.fieldsShape
	if want != d.inFS {
		d.inTok, d.inEnds, d.inPlain, d.inIdx = d.inTok[:0], d.inEnds[:0], d.inPlain[:0], d.inIdx[:0]
		d.inFS = want
	}
	if i = skipSpace(b, i+1); i < len(b) && b[i] == '}' {
		d.depth--
		if into == nil {
			d.vals = append(d.vals, recordValue(&Record{}))
		}
		return i + 1, nil
	}
	// While same, the n keys kept so far are sh.keys[:n] and are not on
	// d.keys; while sameIn, the nIn keys so far are d.inTok's first nIn.
	same, n := true, 0
	sameIn, nIn := true, 0
	for {
		if i >= len(b) {
			return i, d.eof(i)
		}
		if b[i] != '"' {
			return i, d.unexpected(i, "", ", expected a string key")
		}
		var kb []byte
		var idx int32
		if tok := d.inToken(nIn); sameIn && len(tok) > 0 && len(b)-i >= len(tok) && string(b[i:i+len(tok)]) == string(tok) {
			// A string token equal to a valid one is valid.
			idx = d.inIdx[nIn]
			if into != nil {
				// The key itself is not needed.
			} else if d.inPlain[nIn] {
				kb = tok[1 : len(tok)-1]
			} else {
				d.esc = appendUnescaped(d.esc[:0], tok[1:len(tok)-1])
				kb = d.esc
			}
			i += len(tok)
		} else {
			k, j, plain, err := d.parseKey(i)
			if err != nil {
				return j, err
			}
			if sameIn {
				sameIn = false
				if nIn < len(d.inEnds) {
					d.inTok = d.inTok[:d.inStart(nIn)]
					d.inEnds = d.inEnds[:nIn]
					d.inPlain = d.inPlain[:nIn]
					d.inIdx = d.inIdx[:nIn]
				}
			}
			idx = int32(want.Index(string(k)))
			d.inTok = append(d.inTok, b[i:j]...)
			d.inEnds = append(d.inEnds, len(d.inTok))
			d.inPlain = append(d.inPlain, plain)
			d.inIdx = append(d.inIdx, idx)
			kb, i = k, j
		}
		nIn++
		var err error
		if i < len(b) && b[i] == ':' {
			i = skipSpace(b, i+1)
		} else if i, err = d.colon(i); err != nil {
			return i, err
		}
		if idx >= 0 && into != nil {
			if i, err = d.parseValue(i); err != nil {
				return i, err
			}
			last := len(d.vals) - 1
			into[idx] = d.vals[last]
			d.vals[last] = Value{}
			d.vals = d.vals[:last]
			d.present |= 1 << idx
		} else if idx >= 0 {
			if !same || n >= len(sh.keys) || string(kb) != sh.keys[n] {
				if same {
					d.keys = append(d.keys, sh.keys[:n]...)
					same = false
				}
				d.keys = append(d.keys, d.internKey(kb))
			}
			n++
			i, err = d.parseValue(i)
		} else {
			i, err = d.skipValue(i)
		}
		if err != nil {
			return i, err
		}
		if i >= len(b) || b[i] != ',' && b[i] != '}' {
			if i, err = d.afterMember(i); err != nil {
				return i, err
			}
		}
		if b[i] == '}' {
			break
		}
		i = skipSpace(b, i+1)
	}
	if sameIn && nIn < len(d.inEnds) { // fewer members than last time
		d.inTok = d.inTok[:d.inStart(nIn)]
		d.inEnds = d.inEnds[:nIn]
		d.inPlain = d.inPlain[:nIn]
		d.inIdx = d.inIdx[:nIn]
	}
	if into == nil {
		d.closeRecord(0, 0, n, same, sh, &d.fieldsShape)
	}
	d.depth--
	return i + 1, nil
}

// inToken returns the k-th key token remembered by parseObjectFields, or nil.
func (d *Decoder) inToken(k int) []byte {
	if k >= len(d.inEnds) {
		return nil
	}
	return d.inTok[d.inStart(k):d.inEnds[k]]
}

func (d *Decoder) inStart(k int) int {
	if k == 0 {
		return 0
	}
	return d.inEnds[k-1]
}

// skipValue checks the syntax of the value starting at b[i] without
// decoding it, as strictly as parseValue.
func (d *Decoder) skipValue(i int) (int, error) {
	b := d.b
	if i >= len(b) {
		return i, d.eof(i)
	}
	if d.values++; d.values > MaxValues {
		return i, d.fail(i, msgTooManyValues)
	}
	switch b[i] {
	case '"':
		end, _, err := d.scanString(i)
		if err != nil {
			return end, err
		}
		return end + 1, nil
	case '{':
		return d.skipObject(i)
	case '[':
		return d.skipArray(i)
	case 't':
		return d.literal(i, "true")
	case 'f':
		return d.literal(i, "false")
	case 'n':
		return d.literal(i, "null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		end, mant, intDigits, form, err := d.scanNumber(i)
		if err != nil {
			return end, err
		}
		if form == 0 {
			if intDigits >= 19 && !fitsInt64(b[i] == '-', mant, intDigits) {
				return i, d.numberFail(i, msgIntegerRange)
			}
			return end, nil
		}
		// Only an exponent or more than 308 digits can take a number
		// beyond float64's range (about 1.8e308) or below its smallest
		// (about 4.9e-324: 323 zeros after the point).
		if form&numExponent != 0 || end-i > 308 {
			if _, err := d.parseFloat(i, end); err != nil {
				return i, err
			}
		}
		return end, nil
	}
	return i, d.unexpected(i, "", ", expected a JSON value")
}

func (d *Decoder) skipArray(i int) (int, error) {
	if err := d.enter(i); err != nil {
		return i, err
	}
	b := d.b
	if i = skipSpace(b, i+1); i < len(b) && b[i] == ']' {
		d.depth--
		return i + 1, nil
	}
	for {
		var err error
		if i, err = d.skipValue(i); err != nil {
			return i, err
		}
		if i = skipSpace(b, i); i >= len(b) {
			return i, d.eof(i)
		}
		if b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if b[i] != ']' {
			return i, d.unexpected(i, "", " after list element, expected ',' or ']'")
		}
		d.depth--
		return i + 1, nil
	}
}

func (d *Decoder) skipObject(i int) (int, error) {
	if err := d.enter(i); err != nil {
		return i, err
	}
	b := d.b
	if i = skipSpace(b, i+1); i < len(b) && b[i] == '}' {
		d.depth--
		return i + 1, nil
	}
	for {
		if i >= len(b) {
			return i, d.eof(i)
		}
		if b[i] != '"' {
			return i, d.unexpected(i, "", ", expected a string key")
		}
		end, _, err := d.scanString(i)
		if err != nil {
			return end, err
		}
		if i, err = d.colon(end + 1); err != nil {
			return i, err
		}
		if i, err = d.skipValue(i); err != nil {
			return i, err
		}
		if i, err = d.afterMember(i); err != nil {
			return i, err
		}
		if b[i] == '}' {
			d.depth--
			return i + 1, nil
		}
		i = skipSpace(b, i+1)
	}
}

// skipSpace returns the position of the first byte at or after b[i] that is
// not JSON whitespace.
func skipSpace(b []byte, i int) int {
	for ; i < len(b); i++ {
		if c := b[i]; c > ' ' || c != ' ' && c != '\n' && c != '\r' && c != '\t' {
			break
		}
	}
	return i
}

// The error constructors are not inlined, to keep the parsing functions
// small.

//go:noinline
func (d *Decoder) eof(i int) error { return d.fail(i, "unexpected end of input") }

//go:noinline
func (d *Decoder) fail(i int, msg string) error { return &SyntaxError{Offset: int64(i), Msg: msg} }

// numberFail reports that the number at b[i] cannot be kept exactly, naming
// its member.
//
//go:noinline
func (d *Decoder) numberFail(i int, msg string) error {
	return &SyntaxError{Offset: int64(i), Msg: msg, Field: fieldPath(d.b, i)}
}

// fieldPath returns the JSON path of the value that starts at b[off], whose
// document is valid up to there: member names joined by '.', list indexes
// in brackets ("items[2].price"), a name that is not made of letters, digits,
// '_' and '-' quoted in brackets (`["long name"]`); "" for the whole document.
// It reads b[:off] once; the decoder calls it only for an error.
func fieldPath(b []byte, off int) string {
	type frame struct {
		object bool
		index  int
		key    []byte
	}
	var stack []frame
	for i := 0; i < off && i < len(b); {
		switch b[i] {
		case '{', '[':
			stack = append(stack, frame{object: b[i] == '{'})
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ',':
			if n := len(stack); n > 0 && !stack[n-1].object {
				stack[n-1].index++
			}
		case '"':
			end := i + 1
			for end < len(b) && b[end] != '"' {
				if b[end] == '\\' {
					end++
				}
				end++
			}
			if n := len(stack); n > 0 && stack[n-1].object {
				if j := skipSpace(b, end+1); j < len(b) && b[j] == ':' {
					stack[n-1].key = appendUnescaped(stack[n-1].key[:0], b[i+1:min(end, len(b))])
				}
			}
			i = end
		}
		i++
	}
	var path []byte
	for _, f := range stack {
		if !f.object {
			path = append(append(append(path, '['), strconv.Itoa(f.index)...), ']')
			continue
		}
		if plainName(f.key) {
			if len(path) > 0 {
				path = append(path, '.')
			}
			path = append(path, f.key...)
		} else {
			path = append(strconv.AppendQuote(append(path, '['), string(f.key)), ']')
		}
	}
	return string(path)
}

// plainName reports whether a member name can stand in a path unquoted.
func plainName(k []byte) bool {
	if len(k) == 0 {
		return false
	}
	for _, c := range string(k) {
		if c != '_' && c != '-' && !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			return false
		}
	}
	return true
}

// unexpected reports that b[i] cannot be there.
//
//go:noinline
func (d *Decoder) unexpected(i int, before, after string) error {
	return d.fail(i, before+"unexpected "+describe(d.b, i)+after)
}

// describe names b[i] for an error message.
func describe(b []byte, i int) string {
	if i >= len(b) {
		return "end of input"
	}
	c := b[i]
	if c < utf8.RuneSelf {
		if c < 0x20 || c == 0x7f {
			return fmt.Sprintf("character %U", rune(c))
		}
		return "character " + strconv.QuoteRune(rune(c))
	}
	if r, size := utf8.DecodeRune(b[i:]); r != utf8.RuneError || size > 1 {
		return "character " + strconv.QuoteRune(r)
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// JSONStringBytes is how many bytes s takes as a JSON string's contents, at most: a control
// character as \u00XX (6 bytes), `"` and `\` escaped (2), `<`, `>` and `&` as \u003c... (6,
// as an encoder escaping for HTML writes them), U+2028 and U+2029 as \u2028 (6), and a byte
// that is not UTF-8 as \ufffd (6). Answers and expressions' budgets count text by it.
func JSONStringBytes(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			case c == '"' || c == '\\':
				n += 2
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n
}
