package aggregate

import (
	"testing"

	"github.com/scenario-server/scenario-server/value"
)

// A window whose float sum passes ±1.8e308 gives null (docs/semantics.md §5), and the
// windows after it give their own sums again: a running cell kept by subtract-on-evict
// overflowed to +Inf, which retracting the inputs that took it there left +Inf (or NaN), so
// every later result of the key was null while its running window was never empty. By hand,
// windows of 10 s (hopping: sliding by 5 s), events at 0 and 1 of 1e308 each, 5000 of 1.5,
// 10500 of 2.5, 12000 of -1e308, 13000 of 1 and 21000 of 7 (1.5, 2.5, 1 and 7 vanish beside
// 1e308 in a float sum):
//
//   - sliding (each event's window [slice-9, slice], slices of 1 s): at 0, 1e308; at 1 and
//     5000, 2e308: null; at 10500 [1000, 11000): 1.5 + 2.5 = 4; at 12000 and 13000, -1e308
//     (Average -1e308 / 3 and / 4); at 21000 [12000, 22000): -1e308 (Average / 3);
//   - hopping: [-5000, 5000) and [0, 10000) null; [5000, 15000) -1e308 (Average / 4);
//     [10000, 20000) -1e308 (Average / 3); [15000, 25000) and [20000, 30000) 7;
//   - tumbling (each window made afresh, as before): [0, 10000) null; [10000, 20000) -1e308
//     (Average / 3); [20000, 30000) 7.
func TestOverflowedSumRecovers(t *testing.T) {
	steps := []step{
		ev(0, "k", value.Float(1e308)), ev(1, "k", value.Float(1e308)), ev(5000, "k", value.Float(1.5)), wm(5000),
		ev(10500, "k", value.Float(2.5)), wm(10500), ev(12000, "k", value.Float(-1e308)), ev(13000, "k", value.Float(1)),
		ev(21000, "k", value.Float(7)), flush(),
	}
	f := func(x float64) string { return string(value.AppendJSON(nil, value.Float(x))) }
	const null = "null"
	type window struct {
		start, end, time int64
		sum, average     string
	}
	for _, tt := range []struct {
		spec WindowSpec
		want []window
	}{
		{WindowSpec{Kind: Sliding, Length: 10000}, []window{
			{-9000, 1000, 0, f(1e308), f(1e308)}, {-9000, 1000, 1, null, null}, {-4000, 6000, 5000, null, null},
			{1000, 11000, 10500, f(4), f(2)}, {3000, 13000, 12000, f(-1e308), f(-1e308 / 3)},
			{4000, 14000, 13000, f(-1e308), f(-1e308 / 4)}, {12000, 22000, 21000, f(-1e308), f(-1e308 / 3)},
		}},
		{WindowSpec{Kind: Hopping, Length: 10000, Slide: 5000}, []window{
			{-5000, 5000, 4999, null, null}, {0, 10000, 9999, null, null}, {5000, 15000, 14999, f(-1e308), f(-1e308 / 4)},
			{10000, 20000, 19999, f(-1e308), f(-1e308 / 3)}, {15000, 25000, 24999, f(7), f(7)}, {20000, 30000, 29999, f(7), f(7)},
		}},
		{WindowSpec{Kind: Tumbling, Length: 10000}, []window{
			{0, 10000, 9999, null, null}, {10000, 20000, 19999, f(-1e308), f(-1e308 / 3)}, {20000, 30000, 29999, f(7), f(7)},
		}},
	} {
		t.Run(tt.spec.Kind.String(), func(t *testing.T) {
			for _, fn := range []string{"Sum", "Average"} {
				var want []got
				for _, w := range tt.want {
					v := w.sum
					if fn == "Average" {
						v = w.average
					}
					want = append(want, got{"k", w.start, w.end, w.time, v, tt.spec.Kind == Sliding})
				}
				expect(t, runSteps(t, tt.spec, Spec{Func: fn}, steps), want)
			}
		})
	}
}
