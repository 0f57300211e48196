package aggregate

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/scenario-server/scenario-server/value"
)

// asVersion1 rewrites a version 2 snapshot of a slicing operator as version 1 wrote it:
// version byte 1 and no slice geometry (the two varints after the header).
func asVersion1(t *testing.T, snap []byte) []byte {
	t.Helper()
	if snap[0] != 2 {
		t.Fatalf("snapshot version %d, want 2", snap[0])
	}
	_, n := binary.Uvarint(snap[2:]) // the number of aggregations
	head := 2 + n
	_, a := binary.Varint(snap[head:])
	_, b := binary.Varint(snap[head+a:])
	out := append([]byte{1}, snap[1:head]...)
	return append(out, snap[head+a+b:]...)
}

func countOp(t *testing.T, spec WindowSpec) Operator {
	t.Helper()
	op, err := NewOperator(spec, []Named{{Name: "n", Aggregator: mustAgg(t, Spec{Func: "Count"})}}, func(*Result) {})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// A snapshot records its slices: one taken with another precision is refused, never read as
// slices of the wrong width. Version 1 snapshots (no geometry) are read, but a hopping
// window's taken with the version 1 default (60 s / 10 s: 1 s slices) is refused now that
// hopping windows slice by their 10 s slide.
func TestSnapshotKeepsItsSliceGeometry(t *testing.T) {
	hop := func(p int64) WindowSpec {
		return WindowSpec{Kind: Hopping, Length: 60_000, Slide: 10_000, Precision: p}
	}
	snapOf := func(spec WindowSpec) []byte {
		op := countOp(t, spec)
		for _, tm := range []int64{1_000, 25_000, 61_000} {
			if err := op.Add(&Event{Time: tm, Key: []value.Value{value.String("k")}, Inputs: []value.Value{value.Null()}}); err != nil {
				t.Fatal(err)
			}
		}
		op.Advance(30_000)
		return op.AppendSnapshot(nil)
	}
	for _, tc := range []struct {
		name     string
		from, to WindowSpec
		v1       bool
		refused  bool
	}{
		{"same precision", hop(0), hop(0), false, false},
		{"1 s snapshot into 10 s slices", hop(1_000), hop(0), false, true},
		{"10 s snapshot into 1 s slices", hop(0), hop(1_000), false, true},
		{"version 1, 1 s slices into the 10 s default", hop(1_000), hop(0), true, true},
		{"version 1, 1 s slices into explicit 1 s", hop(1_000), hop(1_000), true, false},
		{"version 1 hopping 5m/1m: 60 s then and now", WindowSpec{Kind: Hopping, Length: 300_000, Slide: 60_000},
			WindowSpec{Kind: Hopping, Length: 300_000, Slide: 60_000}, true, false},
		{"version 1 tumbling", WindowSpec{Kind: Tumbling, Length: 10_000}, WindowSpec{Kind: Tumbling, Length: 10_000}, true, false},
		{"version 1 sliding", WindowSpec{Kind: Sliding, Length: 60_000}, WindowSpec{Kind: Sliding, Length: 60_000}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapOf(tc.from)
			if tc.v1 {
				snap = asVersion1(t, snap)
			}
			err := countOp(t, tc.to).Restore(snap)
			if tc.refused != (err != nil) {
				t.Fatalf("Restore: %v, want refused %v", err, tc.refused)
			}
			if err != nil && !errors.Is(err, ErrSnapshotMismatch) {
				t.Fatalf("Restore: %v, want ErrSnapshotMismatch", err)
			}
		})
	}
}
