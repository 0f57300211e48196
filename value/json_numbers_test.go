package value

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// numberMsg reports whether msg is one of the errors of a number the decoder will not change.
func numberMsg(msg string) bool {
	return msg == msgNumberRange || msg == msgIntegerRange || msg == msgNumberUnderflow
}

// checkNumberError checks a number error of doc against math/big, an oracle independent of
// strconv's float parsing: the number at the offset is an integer literal outside int64
// (msgIntegerRange), or a number with a fraction or exponent whose exact value is not 0 and
// whose float64 is infinite (msgNumberRange) or 0 (msgNumberUnderflow).
func checkNumberError(t *testing.T, doc []byte, se *SyntaxError) {
	t.Helper()
	num := doc[se.Offset:]
	end := 0
	for end < len(num) && strings.IndexByte("+-.eE0123456789", num[end]) >= 0 {
		end++
	}
	text := string(num[:end])
	integer := !strings.ContainsAny(text, ".eE")
	switch se.Msg {
	case msgIntegerRange:
		n, ok := new(big.Int).SetString(text, 10)
		if !integer || !ok || n.IsInt64() {
			t.Fatalf("%q: %v, but %q is not an integer beyond int64", doc, se, text)
		}
	case msgNumberRange, msgNumberUnderflow:
		// A float64 is finite below 2^1024 and not 0 from 2^-1075 up (half the smallest
		// subnormal, 2^-1074, rounds to even: to 0). Exponents past ±100000 are decided by
		// their sign alone.
		if integer {
			t.Fatalf("%q: %v for the integer %q", doc, se, text)
		}
		mant, exp, _ := strings.Cut(strings.ToLower(text), "e")
		var e big.Int
		if exp != "" {
			e.SetString(strings.TrimPrefix(exp, "+"), 10)
		}
		if !strings.ContainsAny(mant, "123456789") {
			t.Fatalf("%q: %v, but %q is 0", doc, se, text)
		}
		var over bool
		switch {
		case e.Cmp(big.NewInt(100000)) > 0:
			over = true
		case e.Cmp(big.NewInt(-100000)) < 0:
			over = false
		default:
			f, _, err := big.ParseFloat(mant+"e"+e.String(), 10, 2000, big.ToNearestEven)
			if err != nil {
				t.Fatalf("math/big cannot read %q: %v", text, err)
			}
			f.Abs(f)
			limit := new(big.Float).SetMantExp(big.NewFloat(1), 1024)
			if f.Cmp(limit) >= 0 {
				over = true
			} else if f.Cmp(new(big.Float).SetMantExp(big.NewFloat(1), -1075)) > 0 {
				t.Fatalf("%q: %v, but %q is within float64's range", doc, se, text)
			}
		}
		if want := map[bool]string{true: msgNumberRange, false: msgNumberUnderflow}[over]; se.Msg != want {
			t.Fatalf("%q: %v, want %q", doc, se, want)
		}
	default:
		t.Fatalf("%q: %v is not a number error", doc, se)
	}
}

// TestNumbersNeverChange: a number is decoded exactly as written (an Int), to its nearest
// float64 when it has a fraction or exponent, or refused naming its member; never rounded to
// another integer, an infinity or 0. Worked by hand:
//   - int64 ends at 2^63-1 = 9223372036854775807 and -2^63 = -9223372036854775808; one past
//     either is an error (encoding/json would give 9223372036854775808.0, which prints as
//     9.223372036854776e18: the last digits lost).
//   - The smallest float64 is 2^-1074 ≈ 4.94e-324; 2.4e-324 is under half of it and rounds
//     to 0: an error, as 1e-400 is. 0e-400 is 0 as written: no error.
//   - The largest float64 is about 1.7977e308; 1e400 and 2e308 are beyond.
//
// Offsets are bytes: in {"order": {"items": [{"price": 1}, {"price": 1e-400}]}} the second
// price's value starts at 45 (counted character by character); "ключ" is 8 bytes of UTF-8.
func TestNumbersNeverChange(t *testing.T) {
	for _, tc := range []struct {
		in    string
		want  Value  // when ok
		msg   string // else
		off   int64
		field string
	}{
		{in: `{"id": 9223372036854775807}`, want: rec("id", Int(math.MaxInt64))},
		{in: `{"id": -9223372036854775808}`, want: rec("id", Int(math.MinInt64))},
		{in: `{"id": 9223372036854775808}`, msg: msgIntegerRange, off: 7, field: "id"},
		{in: `{"id": -9223372036854775809}`, msg: msgIntegerRange, off: 7, field: "id"},
		{in: `{"id": 18446744073709551616}`, msg: msgIntegerRange, off: 7, field: "id"},
		{in: `{"x": 4.9e-324}`, want: rec("x", Float(5e-324))},
		{in: `{"x": 2.4e-324}`, msg: msgNumberUnderflow, off: 6, field: "x"},
		{in: `{"x": 1e-400}`, msg: msgNumberUnderflow, off: 6, field: "x"},
		{in: `{"x": -1e-400}`, msg: msgNumberUnderflow, off: 6, field: "x"},
		{in: `{"x": 0e-400}`, want: rec("x", Float(0))},
		{in: `{"x": 1e400}`, msg: msgNumberRange, off: 6, field: "x"},
		{in: `{"x": 1.7976931348623157e308}`, want: rec("x", Float(math.MaxFloat64))},
		// The member is named by its path: records by name, lists by index.
		{in: `{"order": {"items": [{"price": 1}, {"price": 1e-400}]}}`, msg: msgNumberUnderflow, off: 45, field: "order.items[1].price"},
		{in: `[0, [1, 2e308]]`, msg: msgNumberRange, off: 8, field: "[1][1]"},
		{in: `{"long name": 9223372036854775808}`, msg: msgIntegerRange, off: 14, field: `["long name"]`},
		{in: `{"a\"b": {"c": 1, "d": "x,]}", "e": 1e999}}`, msg: msgNumberRange, off: 36, field: `["a\"b"].e`},
		{in: `{"ключ": 99999999999999999999}`, msg: msgIntegerRange, off: 13, field: "ключ"},
		{in: `9223372036854775808`, msg: msgIntegerRange, off: 0, field: ""},
	} {
		var d Decoder
		for name, parse := range map[string]func([]byte) (Value, error){
			"ParseJSON": ParseJSON,
			"ParseFields": func(b []byte) (Value, error) {
				if b[0] != '{' {
					return ParseJSON(b)
				}
				v, err := d.ParseFields(b, nil) // every member skipped, none decoded
				if err == nil {
					v, err = d.Parse(b)
				}
				return v, err
			},
		} {
			got, err := parse([]byte(tc.in))
			if tc.msg == "" {
				if err != nil || !same(got, tc.want) {
					t.Errorf("%s(%s) = %s, %v; want %s", name, tc.in, AppendJSON(nil, got), err, AppendJSON(nil, tc.want))
				}
				continue
			}
			var se *SyntaxError
			if !errors.As(err, &se) || se.Msg != tc.msg || se.Offset != tc.off || se.Field != tc.field {
				t.Errorf("%s(%s): %#v; want %q at %d in field %q", name, tc.in, err, tc.msg, tc.off, tc.field)
				continue
			}
			if tc.field != "" && !strings.Contains(err.Error(), "(field "+tc.field+")") {
				t.Errorf("%s(%s): %q does not name the field", name, tc.in, err)
			}
		}
	}
}

// TestShortDecimalsAsStrconv decodes numbers with a fraction and up to 15 digits (the
// decoder's own conversion) and numbers just past that (strconv's), and checks each float
// against strconv.ParseFloat of the same text, bit for bit (the sign of zero too).
func TestShortDecimalsAsStrconv(t *testing.T) {
	texts := []string{"0.0", "-0.0", "0.5", "-0.5", "12.34", "0.1", "0.2", "0.3", "1.7976931348623157",
		"999999999999999.0", "99999999999999.9", "0.000000000000001", "-0.000000000000001",
		"9007199254740993.0", "900719925474099.3", "1234567890.12345", "1234567890.123456",
		"0.30000000000000004", "8.589973e9", "1.5e3", "00.5"}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200_000 {
		intDigits, fracDigits := 1+rng.IntN(12), 1+rng.IntN(8)
		var b strings.Builder
		if rng.IntN(4) == 0 {
			b.WriteByte('-')
		}
		b.WriteByte(byte('1' + rng.IntN(9)))
		for range intDigits - 1 {
			b.WriteByte(byte('0' + rng.IntN(10)))
		}
		b.WriteByte('.')
		for range fracDigits {
			b.WriteByte(byte('0' + rng.IntN(10)))
		}
		texts = append(texts, b.String(), "0."+b.String()[strings.IndexByte(b.String(), '.')+1:])
	}
	var d Decoder
	for _, text := range texts {
		want, werr := strconv.ParseFloat(text, 64)
		v, err := d.Parse([]byte(text))
		if werr != nil || text == "00.5" {
			if err == nil {
				t.Errorf("%s: decoded %v, want an error", text, v)
			}
			continue
		}
		if err != nil || v.Kind() != KindFloat || math.Float64bits(v.Float()) != math.Float64bits(want) {
			t.Fatalf("%s: decoded %v (%v, %v), want %v", text, v, v.Kind(), err, want)
		}
		digits := len(strings.NewReplacer("-", "", ".", "").Replace(text))
		if _, ok := shortDecimal([]byte(text), numFraction); !strings.ContainsAny(text, "eE") && ok != (digits <= 15) {
			t.Errorf("%s: shortDecimal took it: %v", text, ok)
		}
	}
}
