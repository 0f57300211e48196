package value

import (
	"bytes"
	"math"
	"testing"
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
