package value

import (
	"bytes"
	"math"
	"testing"
	"unsafe"
)

func TestJSONKeepsIntegersExact(t *testing.T) {
	for _, tc := range []struct {
		v    Value
		want string
	}{
		{Int(math.MaxInt64), "9223372036854775807"},
		{Int(math.MinInt64), "-9223372036854775808"},
		{Float(1), "1.0"},
		{Float(0.1), "0.1"},
		{Float(1e21), "1e+21"},
		{Float(-2.5e-7), "-2.5e-07"},
		{Float(math.NaN()), "null"},
		{Float(math.Inf(1)), "null"},
		{String("a\"b\\\n\x01é"), `"a\"b\\\n\u0001é"`},
		{String("plain text, then \t\r and \xff\xfe; ü ok"), `"plain text, then \t\r and \ufffd\ufffd; ü ok"`},
		{String(""), `""`},
		{List([]Value{Null(), Bool(true), Int(2)}), "[null,true,2]"},
		{NewRecord([]string{"b", "a"}, []Value{Int(1), String("x")}), `{"b":1,"a":"x"}`},
	} {
		if got := string(AppendJSON(nil, tc.v)); got != tc.want {
			t.Errorf("AppendJSON = %s, want %s", got, tc.want)
		}
	}
}

func TestCompareIsExactAcrossKinds(t *testing.T) {
	big := Int(math.MaxInt64)          // 2^63-1
	bigF := Float(9223372036854775807) // rounds to 2^63
	if Compare(big, bigF) != -1 || Compare(bigF, big) != 1 {
		t.Error("2^63-1 must be below the float 2^63")
	}
	if Compare(Int(1), Float(1)) != -1 {
		t.Error("equal int and float order int first")
	}
	if Compare(Int(2), Float(1.5)) != 1 || Compare(Float(-0.5), Int(0)) != -1 {
		t.Error("mixed numbers")
	}
	if Compare(Null(), Bool(false)) != -1 || Compare(Int(5), String("")) != -1 {
		t.Error("kind order")
	}
	if Compare(List([]Value{Int(1)}), List([]Value{Int(1), Int(0)})) != -1 {
		t.Error("list prefix")
	}
}

func TestBinaryRoundTrip(t *testing.T) {
	vals := []Value{Null(), Bool(true), Int(-7), Float(3.25), String("héllo"),
		List([]Value{Int(1), List(nil), NewRecord([]string{"k"}, []Value{Float(-0.0)})})}
	var b []byte
	for _, v := range vals {
		b = AppendBinary(b, v)
	}
	for _, want := range vals {
		got, rest, err := DecodeBinary(b)
		if err != nil {
			t.Fatal(err)
		}
		if !Equal(got, want) || !bytes.Equal(AppendJSON(nil, got), AppendJSON(nil, want)) {
			t.Fatalf("got %s want %s", AppendJSON(nil, got), AppendJSON(nil, want))
		}
		b = rest
	}
	if len(b) != 0 {
		t.Fatalf("%d bytes left", len(b))
	}
}

func FuzzDecodeBinary(f *testing.F) {
	f.Add(AppendBinary(nil, List([]Value{Int(1), String("x"), NewRecord([]string{"a"}, []Value{Null()})})))
	f.Add([]byte{byte(KindFloat), 0, 0, 0, 0, 0, 0, 0xf8, 0x7f})
	f.Add([]byte{byte(KindList), 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, rest, err := DecodeBinary(b)
		if err != nil {
			return
		}
		if len(rest) > len(b) {
			t.Fatal("rest longer than input")
		}
		// What decodes re-encodes to bytes that decode to the same value.
		again, left, err := DecodeBinary(AppendBinary(nil, v))
		if err != nil || len(left) != 0 || !bytes.Equal(AppendJSON(nil, again), AppendJSON(nil, v)) {
			t.Fatalf("round trip: %v, %d left, %s vs %s", err, len(left), AppendJSON(nil, again), AppendJSON(nil, v))
		}
	})
}

// A Value is a pointer, 64 bits of payload and a kind: 24 bytes, half of
// what a string and an interface beside the payload took. Every column,
// key table and context holds Values, so the size is part of the design.
func TestValueIsThreeWords(t *testing.T) {
	if n := unsafe.Sizeof(Value{}); n != 24 {
		t.Fatalf("a Value is %d bytes, want 24", n)
	}
}

func TestAccessorsOfOtherKinds(t *testing.T) {
	s, l, r := String("abc"), List([]Value{Int(1)}), NewRecord([]string{"a"}, []Value{Int(1)})
	for _, v := range []Value{Null(), Bool(true), Int(3), Float(2.5), l, r} {
		if v.Str() != "" {
			t.Errorf("%s: Str() = %q", AppendJSON(nil, v), v.Str())
		}
	}
	for _, v := range []Value{Null(), Int(3), s, r} {
		if v.List() != nil {
			t.Errorf("%s: List() = %v", AppendJSON(nil, v), v.List())
		}
	}
	for _, v := range []Value{Null(), Int(3), s, l} {
		if v.Record() != nil {
			t.Errorf("%s: Record() is not nil", AppendJSON(nil, v))
		}
	}
	// KindBits gives the bits of booleans, integers and floats only.
	if k, bits := s.KindBits(); k != KindString || bits != 0 {
		t.Errorf("KindBits of a string = %v, %d", k, bits)
	}
	if k, bits := l.KindBits(); k != KindList || bits != 0 {
		t.Errorf("KindBits of a list = %v, %d", k, bits)
	}
	if List(nil).List() != nil || len(List([]Value{}).List()) != 0 || AppendJSON(nil, List(nil))[0] != '[' {
		t.Errorf("empty lists")
	}
}

// A list's items are returned with their capacity cut to their length, so
// that appending to them cannot write into the array the list shares.
func TestListItemsCannotBeAppendedInPlace(t *testing.T) {
	backing := make([]Value, 2, 8)
	backing[0], backing[1] = Int(1), Int(2)
	v := List(backing)
	items := v.List()
	if len(items) != 2 || cap(items) != 2 {
		t.Fatalf("len %d cap %d, want 2 and 2", len(items), cap(items))
	}
	_ = append(items, Int(3))
	if backing[:3][2].Kind() != KindNull {
		t.Fatal("append wrote into the shared array")
	}
}

func TestMakeRecord(t *testing.T) {
	keys := []string{"b", "a", "c"}
	rec, vals := MakeRecord(keys)
	if len(vals) != 3 || string(AppendJSON(nil, rec)) != `{"b":null,"a":null,"c":null}` {
		t.Fatalf("new record %s, %d values", AppendJSON(nil, rec), len(vals))
	}
	vals[0], vals[1], vals[2] = Int(1), String("x"), Bool(false)
	if got := string(AppendJSON(nil, rec)); got != `{"b":1,"a":"x","c":false}` {
		t.Fatalf("filled record %s", got)
	}
	big := make([]string, 20)
	for i := range big {
		big[i] = string(rune('a' + i))
	}
	rec, vals = MakeRecord(big)
	vals[19] = Int(19)
	if got, ok := rec.Record().Get("t"); len(vals) != 20 || !ok || got.Int() != 19 {
		t.Fatalf("a record of 20 keys: %s", AppendJSON(nil, rec))
	}
	if n := testing.AllocsPerRun(100, func() { MakeRecord(keys) }); n != 1 {
		t.Errorf("MakeRecord of 3 keys: %v allocations, want 1", n)
	}
}

// JSONEncoder writes what AppendJSON writes, whatever the sequence of
// records, key slices and other values.
func TestJSONEncoderAgreesWithAppendJSON(t *testing.T) {
	ab := []string{"a", "b"}
	cd := []string{"c\"", "d"}
	vals := []Value{
		NewRecord(ab, []Value{Int(1), String("x")}),
		NewRecord(ab, []Value{Int(2), Null()}),                 // the same keys slice
		NewRecord(cd, []Value{Bool(true), Float(1.5)}),         // another of the same length
		NewRecord(ab[:1], []Value{Int(3)}),                     // a prefix of the first
		NewRecord([]string{"a", "b"}, []Value{Int(4), Int(5)}), // equal keys, another slice
		NewRecord(nil, nil),
		Int(7), String("s"), List([]Value{NewRecord(cd, []Value{Int(1), Int(2)})}),
		NewRecord(ab, []Value{NewRecord(cd, []Value{Int(1), Int(2)}), List(nil)}),
		// Large integers, written again from the field's last one when equal.
		NewRecord(ab, []Value{Int(1_700_000_000_000), Int(-1_000_000_000)}),
		NewRecord(ab, []Value{Int(1_700_000_000_000), Int(-1_000_000_000)}),
		NewRecord(ab, []Value{Int(1_700_000_010_000), Int(-999_999_999)}),
		NewRecord(ab, []Value{Int(math.MaxInt64), Int(math.MinInt64)}),
		NewRecord(ab, []Value{Int(math.MaxInt64), Float(1e12)}),
		NewRecord(ab, []Value{Int(1_700_000_010_000), Int(math.MinInt64)}),
		NewRecord(ab[1:], []Value{Int(1_700_000_010_000)}), // another slice: its own fields
	}
	var e JSONEncoder
	for round := range 2 {
		for i, v := range vals {
			got, want := string(e.Append([]byte("x"), v)), "x"+string(AppendJSON(nil, v))
			if got != want {
				t.Fatalf("round %d value %d: %s, want %s", round, i, got, want)
			}
		}
	}
}

// Clone shares no memory with what it copies: a record of a string made over a buffer that is
// then written over, and of a list that is then changed, keeps its values.
func TestClone(t *testing.T) {
	buf := []byte("abc")
	s := unsafe.String(&buf[0], len(buf)) // a string over buf, as a scratch value is
	items := []Value{Int(1), String(s)}
	v := NewRecord([]string{"k"}, []Value{List(items)})
	c := Clone(v)
	copy(buf, "xyz")
	items[0] = Int(9)
	if got := string(AppendJSON(nil, c)); got != `{"k":[1,"abc"]}` {
		t.Errorf("clone after the originals changed: %s, want {\"k\":[1,\"abc\"]}", got)
	}
}
