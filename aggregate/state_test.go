package aggregate

import (
	"testing"

	"github.com/scenario-server/scenario-server/value"
)

// StateSize counts keys and slices as worked out by hand for each window kind.
func TestStateSize(t *testing.T) {
	count, err := New(Spec{Func: "Count"})
	if err != nil {
		t.Fatal(err)
	}
	aggs := []Named{{Name: "n", Aggregator: count}}
	type ev struct {
		ms  int64
		key string
	}
	tests := []struct {
		name                string
		spec                WindowSpec
		events              []ev
		watermark           int64
		wantKeys, wantSlice int
	}{
		// 10 s slices: a, b at 0-9 s (slice 0), a at 12 s (slice 1), c at 25 s (slice 2).
		{"tumbling", WindowSpec{Kind: Tumbling, Length: 10_000}, []ev{{1000, "a"}, {2000, "b"}, {12_000, "a"}, {25_000, "c"}}, NoWatermark, 3, 3},
		// The watermark at 20 s closes [0, 10 s) and [10 s, 20 s): slices 0 and 1 go, and
		// with them a and b. c in slice 2 is left.
		{"tumbling, two windows closed", WindowSpec{Kind: Tumbling, Length: 10_000}, []ev{{1000, "a"}, {2000, "b"}, {12_000, "a"}, {25_000, "c"}}, 20_000, 1, 1},
		// Hopping 20 s sliding by 10 s: slices of 10 s, the same three slices.
		{"hopping", WindowSpec{Kind: Hopping, Length: 20_000, Slide: 10_000}, []ev{{1000, "a"}, {2000, "b"}, {12_000, "a"}, {25_000, "c"}}, NoWatermark, 3, 3},
		// Sliding 10 s: precision 1 s (10 s is not whole minutes). a at 1.0 s and 1.2 s
		// (slice 1), b at 2.5 s (slice 2).
		{"sliding", WindowSpec{Kind: Sliding, Length: 10_000}, []ev{{1000, "a"}, {2500, "b"}, {1200, "a"}}, NoWatermark, 2, 2},
		// Sessions of 5 s timeout: a at 1 s and 3 s (one session), a at 20 s (another), b at 2 s.
		{"session", WindowSpec{Kind: Session, SessionTimeout: 5000}, []ev{{1000, "a"}, {3000, "a"}, {20_000, "a"}, {2000, "b"}}, NoWatermark, 2, 3},
		// Count windows of 4 sliding by 2: count-slices of gcd(4, 2) = 2 events, 2 per
		// window, per key: 3 keys, 6 count-slices.
		{"count", WindowSpec{Kind: CountWindow, Count: 4, CountSlide: 2}, []ev{{1, "a"}, {2, "b"}, {3, "c"}, {4, "a"}}, NoWatermark, 3, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op, err := NewOperator(tt.spec, aggs, func(*Result) {})
			if err != nil {
				t.Fatal(err)
			}
			if got := op.StateSize(); got != (StateSize{Bytes: op.StateBytes()}) {
				t.Errorf("empty: %+v, want no keys or slices", got)
			}
			for _, e := range tt.events {
				if err := op.Add(&Event{Time: e.ms, Key: []value.Value{value.String(e.key)}, Inputs: []value.Value{value.Null()}}); err != nil {
					t.Fatal(err)
				}
			}
			if tt.watermark != NoWatermark {
				op.Advance(tt.watermark)
			}
			got := op.StateSize()
			if got.Keys != tt.wantKeys || got.Slices != tt.wantSlice || got.Bytes != op.StateBytes() || got.Bytes <= 0 {
				t.Errorf("%+v, want %d keys, %d slices, %d bytes", got, tt.wantKeys, tt.wantSlice, op.StateBytes())
			}
		})
	}
}
