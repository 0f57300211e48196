package engine

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// partitionFloorRun is an engine of idleCountScenario (10 s tumbling counts, no
// out-of-orderness, idle timeout 2 s) on a wall clock the caller moves, and what it wrote.
type partitionFloorRun struct {
	e    *Engine
	wall int64
	out  []string
}

func newPartitionFloorRun(t testing.TB) *partitionFloorRun {
	r := &partitionFloorRun{wall: 9_000_000}
	r.e = newPartitionFloorRunEngine(t, r)
	return r
}

// newPartitionFloorRunEngine is a new engine for r, on its clock and into its output.
func newPartitionFloorRunEngine(t testing.TB, r *partitionFloorRun) *Engine {
	e, err := New(idleCountScenario(t), Options{Now: func() time.Time { return time.UnixMilli(r.wall) },
		Output: func(_ string, v valueT, _ int64) { r.out = append(r.out, jsonOf(v)) }})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// The heap of partitionEvent against a scan of the partitions for every event
// (partitionScanAlways), on random steps of a live source with up to 6 partitions: events
// of random partitions, at times on a 1 s grid (so that partitions often share the floor's
// time); the wall clock moving with a tick or without, and stepping back (NTP); pending
// partitions; ticks and resumes at times before now (a deployment's idle step is at its
// listing's time, a resume at when the brokers were seen again); listings marked and
// confirmed; a snapshot restored, into the same engine or a new one. After each step both
// have written the same results and have the same watermark.
func TestPartitionFloorHeapRapid(t *testing.T) {
	defer func() { partitionScanAlways = false }()
	rapid.Check(t, func(rt *rapid.T) {
		runs := [2]*partitionFloorRun{newPartitionFloorRun(t), newPartitionFloorRun(t)}
		nParts := rapid.IntRange(1, 6).Draw(rt, "partitions")
		all := make([]int32, nParts)
		for i := range all {
			all[i] = int32(i)
		}
		base := int64(1_000_000)
		steps := rapid.IntRange(1, 120).Draw(rt, "steps")
		for i := range steps {
			kind := rapid.IntRange(0, 9).Draw(rt, "kind")
			var p int32
			var ts, dt, early int64
			var pending []int32
			switch kind {
			case 0, 1, 2, 3, 4:
				p = int32(rapid.IntRange(0, nParts-1).Draw(rt, "p"))
				ts = base + 1000*int64(rapid.IntRange(-3, 30).Draw(rt, "t"))
				base += 1000 * int64(rapid.IntRange(0, 2).Draw(rt, "advance"))
			case 5:
				dt = int64(rapid.IntRange(-1_500, 3_000).Draw(rt, "wall"))
			case 6:
				for _, q := range all {
					if rapid.Bool().Draw(rt, "pending") {
						pending = append(pending, q)
					}
				}
			}
			confirm := kind == 8 && rapid.Bool().Draw(rt, "confirm, not resume")
			tick := kind == 5 && rapid.Bool().Draw(rt, "tick") // or the clock moves alone
			if tick || kind == 8 && !confirm {
				early = int64(rapid.IntRange(0, 3_000).Draw(rt, "early"))
			}
			fresh := kind == 9 && rapid.Bool().Draw(rt, "into a new engine")
			var snap []byte
			if kind == 9 {
				snap = runs[0].e.AppendSnapshot(nil)
			}
			for k, r := range runs {
				partitionScanAlways = k == 0
				switch kind {
				case 0, 1, 2, 3, 4:
					r.e.SetInputPartition(p)
					if err := r.e.PushJSON("in", fmt.Appendf(nil, `{"t": %d}`, ts), int64(i+1)); err != nil {
						rt.Fatal(err)
					}
				case 5:
					r.wall += dt
					if tick {
						r.e.Tick(time.UnixMilli(r.wall - early))
					}
				case 6:
					r.e.SetPartitionsPending("in", pending)
				case 7:
					r.e.MarkPartitions("in", all)
				case 8:
					if confirm {
						r.e.ConfirmPartitions("in")
					} else {
						r.e.SourceResumed("in", time.UnixMilli(r.wall-early))
					}
				case 9:
					if fresh {
						r.e = newPartitionFloorRunEngine(t, r)
					}
					if err := r.e.Restore(snap); err != nil {
						rt.Fatal(err)
					}
				}
			}
			w0, ok0 := runs[0].e.SourceWatermark("in")
			w1, ok1 := runs[1].e.SourceWatermark("in")
			if w0 != w1 || ok0 != ok1 || fmt.Sprint(runs[0].out) != fmt.Sprint(runs[1].out) {
				rt.Fatalf("step %d (kind %d): scanning every event: W %d %v, %v; the heap: W %d %v, %v",
					i, kind, w0, ok0, runs[0].out, w1, ok1, runs[1].out)
			}
		}
	})
}

// The clock stepping back (review): an event of the floor's partition then moves its
// arrival back, so that it goes idle before the scan's until; the next event of another
// partition must not take the heap's answer. Worked by hand (idle timeout 2 s): partition 0
// at 1,000,000 and partition 1 at 1,005,000, both at W and again at W + 1.5 s; a scan at W +
// 1.5 s; the clock back to W + 0.5 s and partition 0 again; at W + 2.6 s partition 0 has been
// silent 2.1 s, so partition 1's 1,006,000 alone is the floor.
func TestPartitionFloorClockBack(t *testing.T) {
	r := newPartitionFloorRun(t)
	const W = 9_000_000
	push := func(p int32, ts int64) {
		r.e.SetInputPartition(p)
		if err := r.e.PushJSON("in", fmt.Appendf(nil, `{"t": %d}`, ts), 1); err != nil {
			t.Fatal(err)
		}
	}
	r.wall = W
	push(0, 1_000_000)
	push(1, 1_005_000)
	r.wall = W + 1500
	push(0, 1_000_000)
	push(1, 1_005_000)
	r.e.SetPartitionsPending("in", nil)
	r.wall = W + 500
	push(0, 1_000_000)
	r.wall = W + 2600
	push(1, 1_006_000)
	if w, _ := r.e.SourceWatermark("in"); w != 1_006_000 {
		t.Errorf("W %d, want 1,006,000", w)
	}
}

// An event of one of many partitions costs about what it costs with one: the floor is the
// least of a heap of the partitions, fixed for the event's partition (before, every event
// scanned them all). Event times keep increasing; "round-robin" sends each event to the next
// partition, which then holds the floor (the worst case), "runs" sends 100 events to a
// partition before the next (as Kafka fetches hand them over).
func BenchmarkPartitionedPush(b *testing.B) {
	for _, order := range []string{"round-robin", "runs"} {
		for _, np := range []int32{1, 10, 100, 1000} {
			b.Run(fmt.Sprint(order, "/", np, "-partitions"), func(b *testing.B) {
				r := newPartitionFloorRun(b)
				recs := make([][]byte, b.N)
				for i := range recs {
					recs[i] = fmt.Appendf(nil, `{"t": %d}`, 1_000_000+i)
				}
				run := 1
				if order == "runs" {
					run = 100
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					r.e.SetInputPartition(int32(i/run) % np)
					_ = r.e.PushJSON("in", recs[i], 1)
				}
			})
		}
	}
}
