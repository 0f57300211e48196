package value

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"
)

func rec(kv ...any) Value {
	var keys []string
	var vals []Value
	for i := 0; i < len(kv); i += 2 {
		keys = append(keys, kv[i].(string))
		vals = append(vals, kv[i+1].(Value))
	}
	return NewRecord(keys, vals)
}

func list(items ...Value) Value { return List(items) }

// same reports whether a and b are the same value, kinds and key order
// included (Equal treats Int 1 and Float 1 as different already, but not
// -0.0 and 0.0).
func same(a, b Value) bool {
	return Equal(a, b) && bytes.Equal(AppendJSON(nil, a), AppendJSON(nil, b))
}

func TestParseJSONValues(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Value
	}{
		// Literals and space.
		{"null", Null()},
		{" \t\r\ntrue\n", Bool(true)},
		{"false", Bool(false)},
		// Integers, exactly, up to the int64 edges.
		{"0", Int(0)},
		{"-0", Int(0)},
		{"7", Int(7)},
		{"-12", Int(-12)},
		{"9007199254740993", Int(9007199254740993)}, // 2^53+1: no float64 has it
		{"999999999999999999", Int(999999999999999999)},
		{"9223372036854775807", Int(math.MaxInt64)},
		{"-9223372036854775807", Int(-math.MaxInt64)},
		{"-9223372036854775808", Int(math.MinInt64)},
		// Beyond int64 an integer is an error (TestNumbersNeverChange); with
		// an exponent it is a Float, by the writer's choice.
		{"9223372036854775808e0", Float(9223372036854775808)},
		{"1.2345678901234567890123456789e29", Float(1.2345678901234568e29)},
		// A fraction or an exponent makes a Float.
		{"1.0", Float(1)},
		{"1e2", Float(100)},
		{"1E2", Float(100)},
		{"1e+2", Float(100)},
		{"25e-1", Float(2.5)},
		{"-0.0", Float(math.Copysign(0, -1))},
		{"0.1", Float(0.1)},
		{"-1.5e-3", Float(-0.0015)},
		{"1.7976931348623157e308", Float(math.MaxFloat64)},
		{"5e-324", Float(5e-324)},
		{"0e99999", Float(0)}, // 0 whatever the exponent: not an underflow
		{"0.000e-999", Float(0)},
		{"-0e-400", Float(math.Copysign(0, -1))},
		// Strings.
		{`""`, String("")},
		{`"abc"`, String("abc")},
		{`"é\u00e9€😀"`, String("éé€😀")},
		{`"\"\\\/\b\f\n\r\t"`, String("\"\\/\b\f\n\r\t")},
		{`"\u0000\u001f\u0041\u00E9\u20ac"`, String("\x00\x1fAé€")},
		{`"\ud83d\ude00"`, String("😀")},                      // surrogate pair
		{`"\uD834\uDD1E"`, String("𝄞")},                      // upper-case hex
		{`"\udbff\udfff"`, String("\U0010FFFF")},             // the last rune
		{`"a\ud800"`, String("a\uFFFD")},                     // lone high surrogate
		{`"\ud800b"`, String("\uFFFDb")},                     // high surrogate, then text
		{`"\udc00\ud800"`, String("\uFFFD\uFFFD")},           // low before high
		{`"\ud800\u0041"`, String("\uFFFDA")},                // high surrogate, then BMP escape
		{`"\ud800\ud800\udc00"`, String("\uFFFD\U00010000")}, // high, then a pair
		{`"\ud800\n"`, String("\uFFFD\n")},
		{"\"a\xffb\"", String("a\uFFFDb")},                 // invalid UTF-8
		{"\"\xed\xa0\x80\"", String("\uFFFD\uFFFD\uFFFD")}, // UTF-8 of a surrogate
		{"\"\xe2\x82\"", String("\uFFFD\uFFFD")},           // truncated sequence
		{"\"\x7f\"", String("\x7f")},                       // DEL is not a control character
		{`"0123456789abcdef0123456789abcdef\"0123456789"`, String(`0123456789abcdef0123456789abcdef"0123456789`)},
		// Lists and records, in document order.
		{"[]", List(nil)},
		{"[ ]", List(nil)},
		{"[1,[2,[]],\"x\"]", list(Int(1), list(Int(2), List(nil)), String("x"))},
		{"{}", rec()},
		{` { "b" : 1 , "a" : [ true , null ] } `, rec("b", Int(1), "a", list(Bool(true), Null()))},
		{`{"k\u00e9y\n":"v","":0}`, rec("kéy\n", String("v"), "", Int(0))},
		{`{"a":{"a":{"a":{}}}}`, rec("a", rec("a", rec("a", rec())))},
		// A repeated key keeps its last value at its first position.
		{`{"a":1,"b":2,"a":3}`, rec("a", Int(3), "b", Int(2))},
		{`{"a":1,"a":"x","a":null}`, rec("a", Null())},
		{`{"a":1,"\u0061":2}`, rec("a", Int(2))},
		{`[{"a":1,"b":2},{"b":3,"a":4,"b":5}]`, list(rec("a", Int(1), "b", Int(2)), rec("b", Int(5), "a", Int(4)))},
	} {
		got, err := ParseJSON([]byte(tc.in))
		if err != nil {
			t.Errorf("ParseJSON(%q): %v", tc.in, err)
			continue
		}
		if !same(got, tc.want) || got.Kind() != tc.want.Kind() {
			t.Errorf("ParseJSON(%q) = %s (%v), want %s (%v)", tc.in, AppendJSON(nil, got), got.Kind(), AppendJSON(nil, tc.want), tc.want.Kind())
		}
		if got.Kind() == KindFloat && math.Signbit(got.Float()) != math.Signbit(tc.want.Float()) {
			t.Errorf("ParseJSON(%q) = %v, wrong sign", tc.in, got.Float())
		}
	}
}

func TestParseJSONErrors(t *testing.T) {
	for _, tc := range []struct {
		in     string
		offset int64
		msg    string // a part of the message
	}{
		{"", 0, "unexpected end of input"},
		{"   ", 3, "unexpected end of input"},
		{"1 2", 2, "unexpected character '2' after the JSON value"},
		{"{} x", 3, "after the JSON value"},
		{"nullx", 4, "after the JSON value"},
		{"\ufeff1", 0, `unexpected character '\ufeff'`}, // no byte order mark
		// Numbers.
		{"01", 1, "leading zero"},
		{"-01", 2, "leading zero"},
		{"00", 1, "leading zero"},
		{"-", 1, "unexpected end of input"},
		{"-a", 1, "unexpected character 'a' in number"},
		{"- 1", 1, "unexpected character ' ' in number"},
		{"1.", 2, "unexpected end of input"},
		{"1.x", 2, "expected a digit after '.'"},
		{"1.e5", 2, "expected a digit after '.'"},
		{".5", 0, "unexpected character '.', expected a JSON value"},
		{"+1", 0, "unexpected character '+'"},
		{"1e", 2, "unexpected end of input"},
		{"1e+", 3, "unexpected end of input"},
		{"1ex", 2, "expected a digit in the exponent"},
		{"1e+-2", 3, "expected a digit in the exponent"},
		{"0x10", 1, "after the JSON value"},
		{"1_000", 1, "after the JSON value"},
		{"NaN", 0, "unexpected character 'N'"},
		{"-NaN", 1, "unexpected character 'N' in number"},
		{"Infinity", 0, "unexpected character 'I'"},
		{"-Infinity", 1, "unexpected character 'I' in number"},
		{"1e400", 0, msgNumberRange},
		{"-1e400", 0, msgNumberRange},
		{"[1, 2e308]", 4, msgNumberRange},
		{"1" + strings.Repeat("0", 309) + ".0", 0, msgNumberRange},
		{"1" + strings.Repeat("0", 309), 0, msgIntegerRange},
		{"9223372036854775808", 0, msgIntegerRange},
		{"[1, -9223372036854775809]", 4, msgIntegerRange},
		{"1e-400", 0, msgNumberUnderflow},
		{"0." + strings.Repeat("0", 400) + "1", 0, msgNumberUnderflow},
		// Literals.
		{"nul", 3, "unexpected end of input"},
		{"nulL", 3, "unexpected character 'L' in literal null"},
		{"tru", 3, "unexpected end of input"},
		{"True", 0, "unexpected character 'T'"},
		{"fals e", 4, "unexpected character ' ' in literal false"},
		{"undefined", 0, "unexpected character 'u'"},
		// Strings.
		{`"abc`, 0, "string not terminated"},
		{`["abc`, 1, "string not terminated"},
		{`"abc\`, 0, "string not terminated"},
		{`"\u12`, 0, "string not terminated"},
		{"\"a\nb\"", 2, "unexpected character U+000A in string"},
		{"\"a\tb\"", 2, "unexpected character U+0009 in string"},
		{"\"\x00\"", 1, "unexpected character U+0000 in string"},
		{"\"0123456789\x1f\"", 11, "unexpected character U+001F in string"},
		{`"\x"`, 2, `invalid escape: unexpected character 'x' after backslash`},
		{`"\'"`, 2, `invalid escape: unexpected character '\''`},
		{`"\U0041"`, 2, `invalid escape: unexpected character 'U'`},
		{"\"\\\x01\"", 2, `invalid escape: unexpected character U+0001`},
		{`"\u12G4"`, 5, "unexpected character 'G' in \\u escape"},
		{`"\u-123"`, 3, "unexpected character '-' in \\u escape"},
		{`'a'`, 0, `unexpected character '\''`},
		// Lists.
		{"[", 1, "unexpected end of input"},
		{"[1", 2, "unexpected end of input"},
		{"[1,", 3, "unexpected end of input"},
		{"[1,]", 3, "unexpected character ']', expected a JSON value"},
		{"[,1]", 1, "unexpected character ','"},
		{"[1 2]", 3, "unexpected character '2' after list element"},
		{"[1:2]", 2, "after list element"},
		{"]", 0, "unexpected character ']'"},
		{"[1}", 2, "after list element, expected ',' or ']'"},
		// Records.
		{"{", 1, "unexpected end of input"},
		{`{"a"`, 4, "unexpected end of input"},
		{`{"a":`, 5, "unexpected end of input"},
		{`{"a":1`, 6, "unexpected end of input"},
		{`{"a" 1}`, 5, "expected ':'"},
		{`{"a":1,}`, 7, "expected a string key"},
		{`{,}`, 1, "expected a string key"},
		{`{a:1}`, 1, "unexpected character 'a', expected a string key"},
		{`{1:1}`, 1, "expected a string key"},
		{`{"a":1 "b":2}`, 7, "after object member, expected ',' or '}'"},
		{`{"a":1]`, 6, "after object member"},
		{`{"a":}`, 5, "unexpected character '}', expected a JSON value"},
		{`{"a\u00":1}`, 7, "in \\u escape"},
		{"{\"a\x01\":1}", 3, "unexpected character U+0001 in string"},
		{"\xc3\xa9", 0, `unexpected character 'é'`},
		{"\xff", 0, "unexpected byte 0xff"},
	} {
		v, err := ParseJSON([]byte(tc.in))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("ParseJSON(%q) = %s, %v; want a *SyntaxError", tc.in, AppendJSON(nil, v), err)
			continue
		}
		if se.Offset != tc.offset || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("ParseJSON(%q): %v; want offset %d and %q", tc.in, err, tc.offset, tc.msg)
		}
		if !v.IsNull() {
			t.Errorf("ParseJSON(%q) returned %s with its error", tc.in, AppendJSON(nil, v))
		}
		if json.Valid([]byte(tc.in)) && !numberMsg(se.Msg) {
			t.Errorf("encoding/json finds %q valid", tc.in)
		}
	}
	err := &SyntaxError{Offset: 3, Msg: "oops"}
	if got := err.Error(); got != "invalid JSON at byte 3: oops" {
		t.Errorf("Error() = %q", got)
	}
}

func TestParseJSONDepth(t *testing.T) {
	for _, open := range []string{"[", `{"k":`} {
		close := map[string]string{"[": "]", `{"k":`: "}"}[open]
		ok := strings.Repeat(open, MaxDepth) + "1" + strings.Repeat(close, MaxDepth)
		v, err := ParseJSON([]byte(ok))
		if err != nil {
			t.Fatalf("%d levels: %v", MaxDepth, err)
		}
		depth := 0
		for v.Kind() == KindList || v.Kind() == KindRecord {
			if v.Kind() == KindList {
				v = v.List()[0]
			} else {
				v = v.Record().Values[0]
			}
			depth++
		}
		if depth != MaxDepth || v.Int() != 1 {
			t.Fatalf("depth %d, innermost %s", depth, AppendJSON(nil, v))
		}
		deep := strings.Repeat(open, MaxDepth+1) + "1" + strings.Repeat(close, MaxDepth+1)
		_, err = ParseJSON([]byte(deep))
		var se *SyntaxError
		if !errors.As(err, &se) || se.Msg != msgTooDeep || se.Offset != int64(MaxDepth*len(open)) {
			t.Fatalf("%d levels: %v", MaxDepth+1, err)
		}
		// ParseFields counts the same way, also in the members it skips.
		var d Decoder
		_, err = d.ParseFields([]byte(`{"x":`+deep+`}`), NewFieldSet("y"))
		if !errors.As(err, &se) || se.Msg != msgTooDeep {
			t.Fatalf("ParseFields, %d levels: %v", MaxDepth+2, err)
		}
		if _, err = d.ParseFields([]byte(`{"x":`+ok[len(open):len(ok)-len(close)]+`}`), nil); err != nil {
			t.Fatalf("ParseFields, %d levels: %v", MaxDepth, err)
		}
	}
	// Depth is not cumulative across siblings, and resets between calls.
	var d Decoder
	sib := "[" + strings.Repeat(strings.Repeat("[", 999)+strings.Repeat("]", 999)+",", 3) + "1]"
	for range 2 {
		if _, err := d.Parse([]byte(sib)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Parse([]byte(strings.Repeat("[", 2000))); err == nil {
		t.Fatal("no error")
	}
	if _, err := d.Parse([]byte(strings.Repeat("[", 1000) + strings.Repeat("]", 1000))); err != nil {
		t.Fatalf("after an error: %v", err)
	}
}

func TestParseJSONRepeatedKeysMany(t *testing.T) {
	// More than 32 members: repeated keys are found with a map.
	var b strings.Builder
	b.WriteString("{")
	for i := range 100 {
		fmt.Fprintf(&b, `"k%d":%d,`, i%40, i)
	}
	b.WriteString(`"end":true}`)
	v, err := ParseJSON([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	r := v.Record()
	if len(r.Keys) != 41 || len(r.Values) != 41 {
		t.Fatalf("%d keys, %d values", len(r.Keys), len(r.Values))
	}
	for i := range 40 {
		last := i + 80 // where k<i> was written last
		if last >= 100 {
			last = i + 40
		}
		if r.Keys[i] != "k"+strconv.Itoa(i) || r.Values[i].Int() != int64(last) {
			t.Fatalf("member %d: %s = %s, want k%d = %d", i, r.Keys[i], AppendJSON(nil, r.Values[i]), i, last)
		}
	}
	if r.Keys[40] != "end" {
		t.Fatal(r.Keys[40])
	}
}

func TestParseJSONDoesNotAliasInput(t *testing.T) {
	in := []byte(`{"name":"abc","list":["def",{"ghi":"jkl"}],"esc":"\u00e9"}`)
	var d Decoder
	v, err := d.Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	want := string(AppendJSON(nil, v))
	for i := range in {
		in[i] = 'x'
	}
	// Later calls reuse the Decoder's buffers; v must not change.
	for range 3 {
		if _, err := d.Parse([]byte(`{"name":"zzz","list":["yyy",{"ghi":"www"}],"esc":"vvv"}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Parse([]byte(`not json`)); err == nil {
			t.Fatal("no error")
		}
	}
	if got := string(AppendJSON(nil, v)); got != want {
		t.Fatalf("value changed: %s, was %s", got, want)
	}
}

func TestDecoderSharesKeys(t *testing.T) {
	var d Decoder
	a, _ := d.Parse([]byte(`{"x":1,"y":{"p":1,"q":2}}`))
	b, _ := d.Parse([]byte(`{"x":2,"y":{"p":3,"q":4}}`))
	c, _ := d.Parse([]byte(`{"x":3,"z":{"p":5,"q":6}}`))
	ra, rb, rc := a.Record(), b.Record(), c.Record()
	if &ra.Keys[0] != &rb.Keys[0] {
		t.Error("same shape, different Keys")
	}
	if &ra.Values[1].Record().Keys[0] != &rb.Values[1].Record().Keys[0] {
		t.Error("same nested shape, different Keys")
	}
	if &rc.Keys[0] == &rb.Keys[0] || rc.Keys[1] != "z" || rb.Keys[1] != "y" {
		t.Error("different shape, same Keys")
	}
	if unsafe.StringData(ra.Keys[0]) != unsafe.StringData(rc.Keys[0]) {
		t.Error("key not interned")
	}
	// A record whose keys are a prefix or extension of the last one.
	for _, in := range []string{`{"x":1}`, `{"x":1,"z":2,"w":3}`, `{"x":1,"z":2,"x":3}`, `{"x":1,"z":2}`} {
		want, _ := ParseJSON([]byte(in))
		got, err := d.Parse([]byte(in))
		if err != nil || !same(got, want) {
			t.Errorf("%s: %s, %v", in, AppendJSON(nil, got), err)
		}
	}
}

func TestParseFields(t *testing.T) {
	want := NewFieldSet("a", "c", "é")
	var d Decoder
	for _, tc := range []struct {
		in, want string
	}{
		{`{}`, `{}`},
		{`{"b":1}`, `{}`},
		{`{"a":1,"b":2,"c":3}`, `{"a":1,"c":3}`},
		{`{"c":[1,{"a":2}],"b":{"a":1,"c":[]},"a":"x"}`, `{"c":[1,{"a":2}],"a":"x"}`},
		{`{"\u0061":1,"b":"\ud800","\u00e9":2}`, `{"a":1,"é":2}`},
		{`{"a":1,"b":2,"a":3}`, `{"a":3}`},
		{`{"c":1,"a":2,"c":3}`, `{"c":3,"a":2}`},
		{` {"b" : [ 1 , -2.5e3 , "s\n" , null , true , false , { } , [ ] ] , "a" : 0 } `, `{"a":0}`},
		{`{"b":0e-999,"a":1}`, `{"a":1}`},
		{`{"b":4.9e-324,"a":1}`, `{"a":1}`},
		{`{"b":-9223372036854775808,"a":1}`, `{"a":1}`},
	} {
		got, err := d.ParseFields([]byte(tc.in), want)
		if err != nil || string(AppendJSON(nil, got)) != tc.want || got.Kind() != KindRecord {
			t.Errorf("ParseFields(%s) = %s, %v; want %s", tc.in, AppendJSON(nil, got), err, tc.want)
		}
		sameInto(t, &d, []byte(tc.in), want, got, nil)
	}
	for _, tc := range []struct {
		in     string
		offset int64
		msg    string
	}{
		{``, 0, "unexpected end of input"},
		{` [1]`, 1, "unexpected character '[', expected a JSON object"},
		{`"a"`, 0, "expected a JSON object"},
		{`{"a":1}x`, 7, "after the JSON value"},
		// Skipped members are checked as strictly as kept ones.
		{`{"b":01}`, 6, "leading zero"},
		{`{"b":1.}`, 7, "expected a digit after '.'"},
		{`{"b":1e400}`, 5, msgNumberRange},
		{`{"b":` + "1" + strings.Repeat("0", 309) + `}`, 5, msgIntegerRange},
		{`{"b":` + "1" + strings.Repeat("0", 309) + `.5}`, 5, msgNumberRange},
		{`{"b":1e-999,"a":1}`, 5, msgNumberUnderflow},
		{`{"b":0.` + strings.Repeat("0", 330) + `1}`, 5, msgNumberUnderflow},
		{`{"b":9223372036854775808}`, 5, msgIntegerRange},
		{`{"b":-9223372036854775809}`, 5, msgIntegerRange},
		{`{"b":[1,{"c":99999999999999999999}]}`, 13, msgIntegerRange},
		{`{"b":"\x"}`, 7, "invalid escape"},
		{"{\"b\":\"\n\"}", 6, "unexpected character U+000A in string"},
		{`{"b":"\u00zz"}`, 10, "in \\u escape"},
		{`{"b":[1,]}`, 8, "expected a JSON value"},
		{`{"b":{"x" 1}}`, 10, "expected ':'"},
		{`{"b":{"x":1,}}`, 12, "expected a string key"},
		{`{"b":{"x":1 "y":2}}`, 12, "after object member"},
		{`{"b":[1 2]}`, 8, "after list element"},
		{`{"b":tru}`, 8, "unexpected character '}' in literal true"},
		{`{"b":NaN}`, 5, "unexpected character 'N'"},
		{`{"b":"abc`, 5, "string not terminated"},
		{`{"b":[`, 6, "unexpected end of input"},
		{`{"b":{`, 6, "unexpected end of input"},
		{`{"b\x":1}`, 4, "invalid escape"},
	} {
		_, err := d.ParseFields([]byte(tc.in), want)
		sameInto(t, &d, []byte(tc.in), want, Value{}, err)
		var se *SyntaxError
		if !errors.As(err, &se) || se.Offset != tc.offset || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("ParseFields(%q): %v; want offset %d and %q", tc.in, err, tc.offset, tc.msg)
		}
		if strings.HasPrefix(tc.in, "{") {
			// As the same error as Parse.
			_, perr := d.Parse([]byte(tc.in))
			if fmt.Sprint(perr) != fmt.Sprint(err) {
				t.Errorf("ParseFields(%q): %v; Parse: %v", tc.in, err, perr)
			}
		}
	}
}

// A Decoder remembers the keys of the last records it saw; whatever the
// sequence of documents, its results must be those of a fresh Decoder.
func TestDecoderCachesAcrossDocuments(t *testing.T) {
	docs := []string{
		`{"a":1,"b":"x","c":{"p":1,"q":[{"z":1}]}}`,
		`{"a":2,"b":"y","c":{"p":2,"q":[{"z":2}]}}`, // same shapes
		`{"a":3,"b":"z"}`,                             // fewer keys
		`{"a":4,"b":"w","c":5,"d":6}`,                 // more keys
		`{"b":1,"a":2}`,                               // other order
		`{"\u0061":1,"b":2}`,                          // the same key, escaped
		`{"a":1,"\u0062":2}`,                          // twice
		`{"a":1,"b":2,"a":3}`,                         // repeated key
		`{"a\"b":1,"c\\":2,"\n":3}`,                   // keys needing escapes
		`{"a\"b":1,"c\\":2,"\n":3}`,                   // again
		`{"a\"b":1,"c\\":2,"\n":3,"a":4}`,             // and more
		`{"é":1,"\u00e9":2,"b":{"é":3}}`,              // non-ASCII keys
		"{\"\xff\":1,\"a\":2}",                        // invalid UTF-8 key
		"{\"\xff\":1,\"a\":2}",                        // again: a key of U+FFFD
		`{"ab":1}`, `{"a":1}`, `{"abc":1}`, `{"a":1}`, // prefixes
		`{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":1}}}}}}}}}}`, // deeper than the cache
		`{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"b":1}}}}}}}}}}`,
		`{}`, `{"a":[]}`, `{"a":1,"b":2}`,
		`{"a":1,"b"`, `{"a":1,"b":2}`, // an error in between
		`{"a":1,"b":[1,}`, `{"a":1,"b":2}`,
	}
	wants := []map[string]struct{}{{"a": {}}, {"b": {}, "c": {}}, {"a": {}, "é": {}, "\uFFFD": {}, "a\"b": {}, "\n": {}}}
	sets := make([]*FieldSet, len(wants))
	for k, w := range wants {
		sets[k] = setOf(w)
	}
	var d Decoder
	for round := range 3 {
		for k, doc := range docs {
			want, set := wants[(k+round)%len(wants)], sets[(k+round)%len(wants)]
			ref, referr := new(Decoder).Parse([]byte(doc))
			got, err := d.Parse([]byte(doc))
			if fmt.Sprint(err) != fmt.Sprint(referr) || !same(got, ref) {
				t.Fatalf("Parse(%s) = %s, %v; fresh Decoder: %s, %v", doc, AppendJSON(nil, got), err, AppendJSON(nil, ref), referr)
			}
			fref, freferr := new(Decoder).ParseFields([]byte(doc), set)
			f, ferr := d.ParseFields([]byte(doc), set)
			sameInto(t, &d, []byte(doc), set, fref, freferr)
			if fmt.Sprint(ferr) != fmt.Sprint(freferr) || !same(f, fref) {
				t.Fatalf("ParseFields(%s) = %s, %v; fresh Decoder: %s, %v", doc, AppendJSON(nil, f), ferr, AppendJSON(nil, fref), freferr)
			}
			if referr == nil && !same(f, filterFields(ref, want)) {
				t.Fatalf("ParseFields(%s) = %s; want %s", doc, AppendJSON(nil, f), AppendJSON(nil, filterFields(ref, want)))
			}
		}
	}
}

// The allocations promised in the comment of json.go: once a Decoder has
// seen the shape, a flat record of up to 16 fields costs one allocation for
// the record and its values, and one for all its strings. (ParseJSON too,
// but its pool is not deterministic, notably under the race detector.)
func TestDecoderAllocations(t *testing.T) {
	line := []byte(`{"date":"2001/01/01 00:47","delay":66,"distance":1750,"origin":"DTW","destination":"LAS"}`)
	numbers := []byte(`{"a":1,"b":-2,"c":3.5,"d":true,"e":null}`)
	nested := []byte(`{"a":"x","b":{"c":"y","d":[1,"z"]}}`)
	want := NewFieldSet("delay", "origin")
	into := make([]Value, want.Len())
	var d Decoder
	for _, tc := range []struct {
		name  string
		parse func() (Value, error)
		max   float64
	}{
		{"Parse", func() (Value, error) { return d.Parse(line) }, 2},
		{"ParseFields", func() (Value, error) { return d.ParseFields(line, want) }, 2},
		// Its string was in the last call too: it is handed out again.
		{"ParseFieldsInto", func() (Value, error) { _, err := d.ParseFieldsInto(line, want, into); return Value{}, err }, 0},
		{"Parse without strings", func() (Value, error) { return d.Parse(numbers) }, 1},
		{"Parse nested", func() (Value, error) { return d.Parse(nested) }, 5}, // 2 records, list and its box, strings
	} {
		if _, err := tc.parse(); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { tc.parse() }); n > tc.max {
			t.Errorf("%s: %v allocations, want at most %v", tc.name, n, tc.max)
		}
	}
}

// TestParseFieldsIntoRecentStrings decodes lines whose strings repeat (from 3,000 keys, so
// that entries of the recent strings collide and are replaced), are long, escaped, nested or
// many, and checks each field against a fresh Decoder's Parse of the same line. It also
// checks that a string seen in the last call is handed out again, not allocated.
func TestParseFieldsIntoRecentStrings(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	want := NewFieldSet("key", "kind", "n", "more")
	into := make([]Value, want.Len())
	var d Decoder
	for i := range 50_000 {
		key := fmt.Sprintf("k%d", rng.IntN(3000))
		var line string
		switch rng.IntN(6) {
		case 0:
			line = fmt.Sprintf(`{"key":%q,"n":%d}`, key, i)
		case 1:
			line = fmt.Sprintf(`{"n":%d,"key":%q,"kind":"sale"}`, i, key+strings.Repeat("x", rng.IntN(40)))
		case 2:
			line = fmt.Sprintf(`{"key":"\u00e9%s","kind":"refund","skip":"zz"}`, key)
		case 3:
			line = fmt.Sprintf(`{"key":%q,"more":{"a":"b"},"kind":"sale"}`, key)
		case 4:
			line = fmt.Sprintf(`{"key":%q,"more":"a","kind":"b","n":"c","x":"y"}`, key)
		default:
			line = fmt.Sprintf(`{"key":%q,"kind":%q}`, key, key)
		}
		present, err := d.ParseFieldsInto([]byte(line), want, into)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		ref, err := new(Decoder).Parse([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		for k, name := range want.Names() {
			w, ok := ref.Record().Get(name)
			if ok != (present&(1<<k) != 0) || !same(into[k], w) {
				t.Fatalf("%s: field %s = %s (present %v), want %s (%v)", line, name, AppendJSON(nil, into[k]), present&(1<<k) != 0, AppendJSON(nil, w), ok)
			}
		}
	}
	line := []byte(`{"key":"k1","kind":"sale","n":1}`)
	if _, err := d.ParseFieldsInto(line, want, into); err != nil {
		t.Fatal(err)
	}
	first := unsafe.StringData(into[0].Str())
	if _, err := d.ParseFieldsInto(line, want, into); err != nil {
		t.Fatal(err)
	}
	if unsafe.StringData(into[0].Str()) != first || into[0].Str() != "k1" || into[1].Str() != "sale" {
		t.Errorf("the second call gave %s and %s, not the first call's strings", AppendJSON(nil, into[0]), AppendJSON(nil, into[1]))
	}
}

// ---- Comparison with encoding/json ----

// stdDecode decodes b with encoding/json, numbers as json.Number.
func stdDecode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// sameAsStd checks that what ParseJSON made of orig, re-encoded with
// AppendJSON and decoded by encoding/json, equals encoding/json's reading of
// orig. Numbers must agree in kind and value: an integer literal that fits
// int64 must stay an integer with the same value (compared as big.Int); any
// other number (with fraction or exponent, or an integer beyond int64) must
// become a float with the same float64 bits.
func sameAsStd(t testing.TB, orig []byte, v Value) {
	t.Helper()
	want, err := stdDecode(orig)
	if err != nil {
		t.Fatalf("encoding/json: %v on %q", err, orig)
	}
	enc := AppendJSON(nil, v)
	got, err := stdDecode(enc)
	if err != nil {
		t.Fatalf("encoding/json cannot read AppendJSON's %q: %v", enc, err)
	}
	if path, ok := stdEqual(got, want, "$"); !ok {
		t.Fatalf("at %s: ParseJSON(%q) re-encoded as %q", path, orig, enc)
	}
}

func stdEqual(got, want any, path string) (string, bool) {
	switch w := want.(type) {
	case nil, bool, string:
		return path, got == want
	case json.Number:
		g, ok := got.(json.Number)
		return path + " (" + string(g) + " vs " + string(w) + ")", ok && numbersAgree(string(g), string(w))
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return path, false
		}
		for i := range w {
			if p, ok := stdEqual(g[i], w[i], path+"["+strconv.Itoa(i)+"]"); !ok {
				return p, false
			}
		}
		return path, true
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return path, false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return path + "." + strconv.Quote(k), false
			}
			if p, ok := stdEqual(gv, wv, path+"."+strconv.Quote(k)); !ok {
				return p, false
			}
		}
		return path, true
	}
	return path, false
}

// numbersAgree compares the literal got (written by AppendJSON) with want
// (from the original text).
func numbersAgree(got, want string) bool {
	wantInt := !strings.ContainsAny(want, ".eE")
	if wantInt {
		w, _ := new(big.Int).SetString(want, 10)
		if w.IsInt64() {
			g, ok := new(big.Int).SetString(got, 10) // fails on a float literal
			return ok && g.Cmp(w) == 0
		}
	}
	if !strings.ContainsAny(got, ".eE") {
		return false // a float must be written as one
	}
	g, err1 := strconv.ParseFloat(got, 64)
	w, err2 := strconv.ParseFloat(want, 64)
	return err1 == nil && err2 == nil && math.Float64bits(g) == math.Float64bits(w)
}

// filterFields is ParseFields done the long way: Parse, then drop members.
func filterFields(v Value, want map[string]struct{}) Value {
	r := v.Record()
	keys, vals := []string{}, []Value{}
	for i, k := range r.Keys {
		if _, ok := want[k]; ok {
			keys = append(keys, k)
			vals = append(vals, r.Values[i])
		}
	}
	return NewRecord(keys, vals)
}

// genJSON writes a random JSON document: every construct of RFC 8259, random
// space, escapes of all kinds (also lone surrogates), invalid UTF-8, numbers
// near the int64 and float64 edges, repeated keys.
type genJSON struct {
	r *rand.Rand
	b []byte
}

func (g *genJSON) space() {
	if g.r.IntN(4) == 0 {
		g.b = append(g.b, " \t\n\r"[g.r.IntN(4)])
	}
}

func (g *genJSON) value(depth int) {
	g.space()
	n := 10
	if depth > 4 {
		n = 7 // no more containers
	}
	switch g.r.IntN(n) {
	case 0:
		g.b = append(g.b, "null"...)
	case 1:
		g.b = append(g.b, "true"...)
	case 2:
		g.b = append(g.b, "false"...)
	case 3, 4:
		g.number()
	case 5, 6:
		g.str(20)
	case 7, 8:
		g.b = append(g.b, '{')
		g.space()
		for i := range g.r.IntN(6) {
			if i > 0 {
				g.b = append(g.b, ',')
			}
			g.space()
			g.key()
			g.space()
			g.b = append(g.b, ':')
			g.value(depth + 1)
		}
		g.b = append(g.b, '}')
	case 9:
		g.b = append(g.b, '[')
		g.space()
		for i := range g.r.IntN(6) {
			if i > 0 {
				g.b = append(g.b, ',')
			}
			g.value(depth + 1)
		}
		g.b = append(g.b, ']')
	}
	g.space()
}

func (g *genJSON) key() {
	if g.r.IntN(4) == 0 {
		g.str(5)
		return
	}
	// A small set of names, so that keys repeat.
	k := []string{`"a"`, `"b"`, `"c"`, `"\u0061"`, `"long name"`, `""`}[g.r.IntN(6)]
	g.b = append(g.b, k...)
}

var genEdges = []string{
	"0", "-0", "1", "-1", "9223372036854775807", "-9223372036854775808",
	"9223372036854775808", "-9223372036854775809", "18446744073709551615",
	"18446744073709551616", "99999999999999999999999", "9007199254740993",
	"0.0", "-0.0", "1.0", "1e0", "1E+0", "1e-0", "0e10", "0.5e-3", "1.7976931348623157e308",
	"4.9e-324", "2.4e-324", "1e-400", "-1e-400", "123456789.123456789e-5",
	"100000000000000000000000000000000000000000.0",
}

func (g *genJSON) number() {
	switch g.r.IntN(5) {
	case 0:
		g.b = append(g.b, genEdges[g.r.IntN(len(genEdges))]...)
	case 1:
		g.b = strconv.AppendInt(g.b, g.r.Int64()>>g.r.IntN(64)*int64(1-2*g.r.IntN(2)), 10)
	case 2:
		if g.r.IntN(2) == 0 {
			g.b = append(g.b, '-')
		}
		g.b = append(g.b, byte('1'+g.r.IntN(9)))
		for range g.r.IntN(25) {
			g.b = append(g.b, byte('0'+g.r.IntN(10)))
		}
	default:
		if g.r.IntN(2) == 0 {
			g.b = append(g.b, '-')
		}
		if g.r.IntN(3) == 0 {
			g.b = append(g.b, '0')
		} else {
			g.b = strconv.AppendUint(g.b, g.r.Uint64()>>g.r.IntN(64), 10)
		}
		if g.r.IntN(3) > 0 {
			g.b = append(g.b, '.')
			for range 1 + g.r.IntN(18) {
				g.b = append(g.b, byte('0'+g.r.IntN(10)))
			}
		}
		if g.r.IntN(2) == 0 {
			g.b = append(g.b, "eE"[g.r.IntN(2)])
			if s := g.r.IntN(3); s < 2 {
				g.b = append(g.b, "+-"[s])
			}
			g.b = strconv.AppendInt(g.b, int64(g.r.IntN(330)), 10)
		}
	}
}

func (g *genJSON) str(maxLen int) {
	g.b = append(g.b, '"')
	for range g.r.IntN(maxLen) {
		switch g.r.IntN(12) {
		case 0:
			g.b = append(g.b, '\\', `"\/bfnrt`[g.r.IntN(8)])
		case 1:
			g.b = fmt.Appendf(g.b, `\u%04x`, g.r.IntN(0x10000))
		case 2:
			g.b = fmt.Appendf(g.b, `\u%04X`, 0xd800+g.r.IntN(0x800)) // a surrogate, maybe paired
		case 3:
			g.b = utf8.AppendRune(g.b, rune(0x80+g.r.IntN(0x10ff80)))
		case 4:
			g.b = append(g.b, byte(0x80+g.r.IntN(0x80))) // probably invalid UTF-8
		default:
			c := byte(0x20 + g.r.IntN(0x5f))
			if c == '"' || c == '\\' {
				c = '\''
			}
			g.b = append(g.b, c)
		}
	}
	g.b = append(g.b, '"')
}

func TestParseJSONMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	g := &genJSON{r: r}
	var d Decoder
	wantSets := []map[string]struct{}{nil, {"a": {}}, {"a": {}, "c": {}}, {"": {}, "long name": {}, "b": {}}}
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for i := range n {
		g.b = g.b[:0]
		if i%2 == 0 {
			g.b = append(g.b, '{')
			g.key()
			g.b = append(g.b, ':')
			g.value(1)
			g.b = append(g.b, ',')
			g.key()
			g.b = append(g.b, ':')
			g.value(1)
			g.b = append(g.b, '}')
		} else {
			g.value(0)
		}
		doc := g.b
		if !json.Valid(doc) {
			t.Fatalf("generated invalid JSON %q", doc)
		}
		v, err := ParseJSON(doc)
		if err != nil {
			var se *SyntaxError
			if errors.As(err, &se) && numberMsg(se.Msg) {
				checkNumberError(t, doc, se)
				continue
			}
			t.Fatalf("ParseJSON(%q): %v", doc, err)
		}
		sameAsStd(t, doc, v)
		v2, err := d.Parse(doc)
		if err != nil || !same(v, v2) {
			t.Fatalf("Decoder.Parse(%q) = %s, %v; ParseJSON: %s", doc, AppendJSON(nil, v2), err, AppendJSON(nil, v))
		}
		if v.Kind() == KindRecord {
			want := wantSets[i%len(wantSets)]
			f, err := d.ParseFields(doc, setOf(want))
			if err != nil || !same(f, filterFields(v, want)) {
				t.Fatalf("ParseFields(%q) = %s, %v; want %s", doc, AppendJSON(nil, f), err, AppendJSON(nil, filterFields(v, want)))
			}
		}
	}
}

// ---- Real data ----

// dataFile finds one of the shared event files: in the repository's testdata
// directory, or where the project's shared data lives. It skips the test when
// neither has it.
func dataFile(tb testing.TB, name string) []byte {
	tb.Helper()
	for _, dir := range []string{"testdata", "../testdata", "../../shared/data"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			return b
		}
	}
	tb.Skipf("%s not found", name)
	return nil
}

func dataLines(tb testing.TB, name string) [][]byte {
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(dataFile(tb, name)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			lines = append(lines, bytes.Clone(sc.Bytes()))
		}
	}
	if len(lines) == 0 {
		tb.Fatalf("%s is empty", name)
	}
	return lines
}

func TestParseJSONRealData(t *testing.T) {
	for _, tc := range []struct {
		file   string
		fields map[string]struct{}
	}{
		{"flights-20k.ndjson", map[string]struct{}{"delay": {}, "origin": {}}},
		{"access-log-10k.ndjson", map[string]struct{}{"status": {}, "path": {}}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			lines := dataLines(t, tc.file)
			set := setOf(tc.fields)
			var d Decoder
			for n, line := range lines {
				v, err := ParseJSON(line)
				if err != nil {
					t.Fatalf("line %d: %v", n+1, err)
				}
				sameAsStd(t, line, v)
				if v2, err := d.Parse(line); err != nil || !same(v, v2) {
					t.Fatalf("line %d: Decoder.Parse differs: %v", n+1, err)
				}
				f, err := d.ParseFields(line, set)
				sameInto(t, &d, line, set, f, err)
				if err != nil || !same(f, filterFields(v, tc.fields)) || len(f.Record().Keys) != 2 {
					t.Fatalf("line %d: ParseFields = %s, %v", n+1, AppendJSON(nil, f), err)
				}
			}
			t.Logf("%d lines", len(lines))
		})
	}
}

// ---- Fuzzing ----

func fuzzSeeds(f *testing.F) {
	for _, s := range []string{
		`{"date":"2001/01/01 00:47","delay":66,"distance":1750,"origin":"DTW","destination":"LAS"}`,
		`{"ts":"2015-05-17T10:05:03Z","status":200,"bytes":null,"referrer":null,"agent":"Mozilla/5.0 (X11; Linux x86_64)"}`,
		`[1,-0,0.5,1e2,-1.5E-3,9223372036854775807,-9223372036854775808,9223372036854775808,1e400]`,
		`{"a":[1e-400],"b":9223372036854775808,"c":-0e-400,"d":0.0000e-999}`,
		`{"x":{"y z":[2.4e-324,4.9e-324,-9223372036854775809]}}`,
		`"\ud83d\ude00\ud800\udc00\udc00x\u00e9\n\"\\\/\b\f\r\t"`,
		"\"\xff\xed\xa0\x80\"",
		`{"a":1,"b":{"a":[true,false,null]},"a":2}`,
		`  {} `, `[]`, `01`, `1.`, `-`, `.5`, `1e`, `NaN`, `"abc`, `[1,]`, `{"a":1,}`,
		strings.Repeat("[", 1001) + strings.Repeat("]", 1001),
	} {
		f.Add([]byte(s))
	}
}

func FuzzParseJSON(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseJSON(b)
		valid := json.Valid(b)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > int64(len(b)) {
				t.Fatalf("ParseJSON(%q): %v", b, err)
			}
			if valid {
				// Valid JSON is refused only for a number that would change
				// (found at the offset, checked with math/big) or nesting
				// deeper than MaxDepth (encoding/json allows 10000).
				switch {
				case numberMsg(se.Msg):
					checkNumberError(t, b, se)
				case se.Msg == msgTooDeep:
				default:
					t.Fatalf("ParseJSON(%q): %v, but encoding/json finds it valid", b, err)
				}
			}
			return
		}
		if !valid {
			t.Fatalf("ParseJSON(%q) = %s, but encoding/json finds it invalid", b, AppendJSON(nil, v))
		}
		sameAsStd(t, b, v)
		enc := AppendJSON(nil, v)
		again, err := ParseJSON(enc)
		if err != nil || !bytes.Equal(AppendJSON(nil, again), enc) {
			t.Fatalf("round trip of %q: %q, %v", b, AppendJSON(nil, again), err)
		}
	})
}

var fuzzDecoder Decoder // kept across inputs, so that its caches are exercised

// The field set of the last fuzz input, kept while the names are the same,
// so that the Decoder's per-set cache is exercised too.
var (
	fuzzNames string
	fuzzSet   *FieldSet
)

// setOf returns the set of m's names, sorted.
func setOf(m map[string]struct{}) *FieldSet {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return NewFieldSet(names...)
}

// sameInto checks that ParseFieldsInto agrees with ParseFields' result rec
// (or its error): the same error, or for every name of set, the member's
// presence and value.
func sameInto(t *testing.T, d *Decoder, b []byte, set *FieldSet, rec Value, recErr error) {
	t.Helper()
	if set.Len() > MaxFieldsInto {
		return
	}
	dst := make([]Value, set.Len())
	for k := range dst {
		dst[k] = String("stale") // must be overwritten or cleared
	}
	present, err := d.ParseFieldsInto(b, set, dst)
	if fmt.Sprint(err) != fmt.Sprint(recErr) {
		t.Fatalf("ParseFieldsInto(%q): %v; ParseFields: %v", b, err, recErr)
	}
	if _, oerr := d.ParseObject(b); fmt.Sprint(oerr) != fmt.Sprint(recErr) {
		t.Fatalf("ParseObject(%q): %v; ParseFields: %v", b, oerr, recErr)
	}
	for k, name := range set.Names() {
		want, ok := Value{}, false
		if r := rec.Record(); r != nil {
			want, ok = r.Get(name)
		}
		if got := present&(1<<k) != 0; got != ok || !same(dst[k], want) {
			t.Fatalf("ParseFieldsInto(%q): %q = %s (present %v); ParseFields: %s (%v)", b, name, AppendJSON(nil, dst[k]), got, AppendJSON(nil, want), ok)
		}
	}
}

func FuzzParseFields(f *testing.F) {
	for _, s := range []string{
		`{"date":"2001/01/01 00:47","delay":66,"distance":1750,"origin":"DTW","destination":"LAS"}`,
		`{"a":1,"b":{"a":[true,false,null]},"a":2,"c":"\u00e9"}`,
		`{"b":1e400,"a":1}`, `{"b":1e-400,"a":1}`, `{"b":[9223372036854775808],"a":1}`, `{"b":[1,],"a":1}`, `{"a":1,"\u0061":2}`, `[1]`, `{}`,
	} {
		f.Add([]byte(s), "a,delay,origin")
	}
	f.Fuzz(func(t *testing.T, b []byte, names string) {
		want := map[string]struct{}{}
		for _, n := range strings.Split(names, ",") {
			want[n] = struct{}{}
		}
		full, ferr := ParseJSON(b)
		if names != fuzzNames {
			fuzzNames, fuzzSet = names, setOf(want)
		}
		got, gerr := fuzzDecoder.ParseFields(b, fuzzSet)
		sameInto(t, &fuzzDecoder, b, fuzzSet, got, gerr)
		if ferr != nil || full.Kind() != KindRecord {
			if gerr == nil {
				t.Fatalf("ParseFields(%q) = %s; ParseJSON: %s, %v", b, AppendJSON(nil, got), AppendJSON(nil, full), ferr)
			}
			if i := len(b) - len(bytes.TrimLeft(b, " \t\r\n")); i < len(b) && b[i] == '{' && fmt.Sprint(gerr) != fmt.Sprint(ferr) {
				t.Fatalf("ParseFields(%q): %v; ParseJSON: %v", b, gerr, ferr)
			}
			return
		}
		if gerr != nil {
			t.Fatalf("ParseFields(%q): %v", b, gerr)
		}
		if want := filterFields(full, want); !same(got, want) {
			t.Fatalf("ParseFields(%q) = %s, want %s", b, AppendJSON(nil, got), AppendJSON(nil, want))
		}
	})
}

// A document decodes into at most MaxValues values, counted at any depth (the object and each
// value in it): {"a":[{},{},...]} with 524,286 records is 524,288 values and decodes; one
// record more is an error at that record's byte (6 bytes of {"a":[ and 3 per record before
// it). ParseFields fails exactly where Parse does, skipped members counted.
func TestMaxValues(t *testing.T) {
	doc := func(records int) []byte {
		b := []byte(`{"a":[`)
		for i := range records {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, "{}"...)
		}
		return append(b, "]}"...)
	}
	ok := doc(MaxValues - 2)
	if v, err := ParseJSON(ok); err != nil || len(v.Record().Values[0].List()) != MaxValues-2 {
		t.Fatalf("at the bound: %v", err)
	}
	over := doc(MaxValues - 1)
	var d Decoder
	for name, parse := range map[string]func([]byte) error{
		"Parse":              func(b []byte) error { _, err := d.Parse(b); return err },
		"ParseFields":        func(b []byte) error { _, err := d.ParseFields(b, NewFieldSet("b")); return err },
		"ParseFields wanted": func(b []byte) error { _, err := d.ParseFields(b, NewFieldSet("a")); return err },
	} {
		if err := parse(ok); err != nil {
			t.Errorf("%s at the bound: %v", name, err)
		}
		var se *SyntaxError
		err := parse(over)
		if !errors.As(err, &se) || se.Offset != int64(6+3*(MaxValues-2)) || se.Msg != msgTooManyValues {
			t.Errorf("%s past the bound: %v, want the error at byte %d", name, err, 6+3*(MaxValues-2))
		}
	}
}

// Check fails where Parse fails, with the same error, and passes where it passes.
func TestCheck(t *testing.T) {
	var d Decoder
	for _, in := range []string{`{"a": [1, 2.5, "x", null, true]}`, ` 7 `, `[{}]`, `{"a": 1e999}`, `[1,]`, `{"a": 1} x`, "[" + strings.Repeat("[", MaxDepth) + "]"} {
		_, perr := ParseJSON([]byte(in))
		cerr := d.Check([]byte(in))
		if fmt.Sprint(perr) != fmt.Sprint(cerr) {
			t.Errorf("%.40q: Check %v, Parse %v", in, cerr, perr)
		}
	}
}

// JSONStringBytes is at most what encoding/json (which escapes <, > and & for HTML, U+2028
// and U+2029, and writes a byte that is not UTF-8 as \ufffd) writes between a string's quotes,
// and exactly that but for \n, \r, \t, \b and \f, which it writes in 2 bytes where the count
// takes 6 for every control character (an upper bound): "<&>\n\t\\" is 3 × 6 + 2 × 6 + 2 = 32
// by hand, encoding/json's 24.
func TestJSONStringBytesAsEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "ab", "a\x01\"<é\u2028\xff", "\u2029日本\xc3", strings.Repeat("\x00z", 50), "<&>\n\t\\"} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		want := len(b) - 2
		if strings.ContainsAny(s, "\n\t") {
			want = 32
		}
		if got := JSONStringBytes(s); got != want {
			t.Errorf("%q: %d, want %d", s, got, want)
		}
	}
}
