package aggregate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/scenario-server/scenario-server/value"
)

// asVersion4 checks that snap, of an operator not paused part way, is of version 4, which it
// is written as (the server before version 5 reads it).
func asVersion4(t *testing.T, snap []byte) []byte {
	t.Helper()
	if snap[0] != 4 {
		t.Fatalf("snapshot version %d of an operator not paused, want 4", snap[0])
	}
	return snap
}

// asVersion1 rewrites a version 4 snapshot of a slicing operator without variances and
// without a close paused part way (the bytes version 3 wrote, but for the version byte) as
// version 1 wrote it: version byte 1, no slice geometry (the two varints after the header)
// and, for a tumbling or hopping window, no count of folded slices (version 4's last uvarint;
// the byte before it ends a uvarint too, so its start is after the last byte with the high
// bit clear).
func asVersion1(t *testing.T, snap []byte) []byte {
	t.Helper()
	snap = asVersion4(t, snap)
	if k := WindowKind(snap[1]); k == Tumbling || k == Hopping {
		i := len(snap) - 1
		for snap[i-1]&0x80 != 0 {
			i--
		}
		snap = snap[:i]
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

// A version 2 snapshot, whose running block holds the whole of the next window to close,
// restores into the lazily folding running block without counting a slice twice or
// missing one. The bytes were written by the version 2 code (commit d5e2d36) for hopping
// 30 s / 10 s windows of Count and Sum after events a@1 s (1), a@12 s (2), b@25 s (5) and
// a watermark of 20 s: windows up to [-10 s, 20 s) have fired and the running block holds
// [0 s, 30 s), slices 0, 1 and 2.
func TestRestoreVersion2RunningBlock(t *testing.T) {
	const v2 = "\x02\x02\x02\x00\xa0\x9c\x01\xc0\xb8\x02\x03\x06\x00\x00\x00\x04\x00\x02\x03\x01a\x03\x01b\x00\x02\x01\x05\x01\x04\x01a\x01\x05\x01\x04\x01b\x02\x02\x04\x02\x00\x00\x03\x00\x02\b\x02\x00\x00\x00\x00\x00\x00\x00\b\x01\x02\x01\x00\x01\x00\x01\x00\x01\x00\x01\x00\x01\x00\x01\x00\x03\x00\x02\x03\x00\x00\x03\x00\x00\x03\x00\x00\x03\x00\x00\x03\x00\x00\x03\x00\x00\x03\x00\x00\x02\x02\b\x02\x00\x00\x00\x00\x00\x00\x00\b\x01\x02\x01\x00\x01\x00\x01\x00\x01\x00\x01\x00\x01\x00\x01\x00\x03\x00\x04\x03\x00\x00\x03\x00\x00\x03\x00\x00\x03\x00\x00\x03\x00\x00\x03\x00\x00\x03\x00\x00\x04\x02\b\x00\x02\x00\x00\x00\x00\x00\x00\b\x01\x00\x01\x02\x01\x00\x01\x00\x01\x00\x01\x00\x01\x00\x01\x00\x03\x00\x00\x03\x00\n\x03\x00\x00\x03\x00\x00\x03\x00\x00\x03\x00\x00\x03\x00\x00\x03\x00\x00\x01\x00\x06\b\x04\x02\x00\x00\x00\x00\x00\x00\b\x01\x04\x01\x02\x01\x00\x01\x00\x01\x00\x01\x00\x01\x00\x01\x00\x03\x00\x06\x03\x00\n\x03\x00\x00\x03\x00\x00\x03\x00\x00\x03\x00\x00\x03\x00\x00\x03\x00\x00\x00"
	var got []string
	op, err := NewOperator(WindowSpec{Kind: Hopping, Length: 30_000, Slide: 10_000},
		[]Named{{Name: "n", Aggregator: mustAgg(t, Spec{Func: "Count"})}, {Name: "total", Aggregator: mustAgg(t, Spec{Func: "Sum"})}},
		func(r *Result) {
			got = append(got, fmt.Sprintf("%s [%d,%d) %s %s", r.Key[0].Str(), r.Start, r.End,
				value.AppendJSON(nil, r.Values[0]), value.AppendJSON(nil, r.Values[1])))
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Restore([]byte(v2)); err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct {
		t int64
		k string
		v int64
	}{{28_000, "a", 10}, {35_000, "b", 1}} {
		if err := op.Add(&Event{Time: e.t, Key: []value.Value{value.String(e.k)}, Inputs: []value.Value{value.Null(), value.Int(e.v)}}); err != nil {
			t.Fatal(err)
		}
	}
	op.Flush()
	// a: 1@1s 2@12s 10@28s; b: 5@25s 1@35s.
	want := []string{
		"a [0,30000) 3 13", "b [0,30000) 1 5",
		"a [10000,40000) 2 12", "b [10000,40000) 2 6",
		"a [20000,50000) 1 10", "b [20000,50000) 2 6",
		"b [30000,60000) 1 1",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after restoring a version 2 snapshot:\n got %q\nwant %q", got, want)
	}
}
